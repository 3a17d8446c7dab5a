# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""os-keypairs: import, generate, list, show, delete; key_name at boot."""

import base64
import hashlib

from common.db import api_tables
from common.db import cell_tables
from services.api import keypair_keys
from tests.unit.api import helpers
from tests.unit.api.helpers import V

PUBLIC_KEY = ('ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINviFH8ZSPBDer4G0rYTkRJHw'
              'ks11Q3mkDHH/425iIle alice@example')
# NOTE: ssh-keygen -l -E md5 of PUBLIC_KEY.
FINGERPRINT = 'd0:f6:cb:41:29:e4:b8:0d:91:a4:a3:ee:f5:f1:1e:a5'
ALICE = {'token': 'alice:projA'}
BOB = {'token': 'bob:projB'}


def _create(world, name='kp', public_key=PUBLIC_KEY, version='2.79',
            caller=ALICE, **extra):
    keypair = dict(name=name, **extra)
    if public_key is not None:
        keypair['public_key'] = public_key
    return world.client.post(V + '/os-keypairs', {'keypair': keypair},
                             version=version, **caller)


def _keypairs(world):
    return world.rows('api', api_tables.key_pairs)


def test_import_answers_the_ssh_fingerprint(world):
    status, body, _r = _create(world)
    assert status == 201, body
    assert body['keypair'] == {
        'name': 'kp', 'public_key': PUBLIC_KEY, 'fingerprint': FINGERPRINT,
        'user_id': 'alice', 'type': 'ssh'}
    status, body, _r = world.client.get(V + '/os-keypairs/kp', **ALICE)
    assert status == 200
    assert body['keypair']['fingerprint'] == FINGERPRINT
    assert body['keypair']['user_id'] == 'alice'
    assert body['keypair']['deleted'] is False


def test_before_2_2_create_is_200_without_type_and_delete_202(world):
    status, body, _r = _create(world, version='2.1')
    assert status == 200
    assert 'type' not in body['keypair']
    status, _b, _r = world.client.delete(V + '/os-keypairs/kp',
                                         version='2.1', **ALICE)
    assert status == 202
    assert _keypairs(world) == []


def test_generated_key_pair_has_a_private_key_that_matches(world):
    status, body, _r = _create(world, public_key=None)
    assert status == 201, body
    keypair = body['keypair']
    assert keypair['private_key'].startswith(
        '-----BEGIN RSA PRIVATE KEY-----')
    assert keypair['public_key'].startswith('ssh-rsa ')
    blob = base64.b64decode(keypair['public_key'].split()[1])
    assert keypair['fingerprint'] == ':'.join(
        '%02x' % b for b in hashlib.md5(blob).digest())
    # NOTE: the private key is answered once and never stored.
    [row] = _keypairs(world)
    assert 'PRIVATE' not in row['public_key']


def test_2_92_imports_only_and_allows_at_and_dot_in_names(world):
    status, body, _r = _create(world, name='alice@host.example',
                               public_key=None, version='2.92')
    assert status == 400, body
    assert 'public_key' in body['badRequest']['message']
    status, body, _r = _create(world, name='alice@host.example',
                               version='2.91')
    assert status == 400, body
    assert _keypairs(world) == []
    status, body, _r = _create(world, name='alice@host.example',
                               version='2.92')
    assert status == 201, body
    assert 'private_key' not in body['keypair']
    status, body, _r = _create(world, name='gen', public_key=None,
                               version='2.91')
    assert status == 201 and body['keypair']['private_key']


def test_x509_key_pair_fingerprint_is_sha1_of_the_der(world):
    der = b'\x30\x03\x02\x01\x01'
    pem = ('-----BEGIN CERTIFICATE-----\n%s\n-----END CERTIFICATE-----\n'
           % base64.b64encode(der).decode())
    status, body, _r = _create(world, public_key=pem, type='x509')
    assert status == 201, body
    assert body['keypair']['type'] == 'x509'
    assert body['keypair']['fingerprint'] == ':'.join(
        '%02x' % b for b in hashlib.sha1(der).digest())


def test_bad_public_key_is_400_and_nothing_is_stored(world):
    for key, key_type in (('not a key', 'ssh'), ('ssh-rsa !!!!', 'ssh'),
                          ('ssh-rsa ' + base64.b64encode(
                              b'\x00\x00\x00\x07ssh-dss').decode(), 'ssh'),
                          (PUBLIC_KEY, 'x509')):
        status, body, _r = _create(world, public_key=key, type=key_type)
        assert status == 400, key
        assert body['badRequest']['message'] == (
            'Keypair data is invalid: failed to generate fingerprint')
    assert _keypairs(world) == []


def test_bad_names_are_400(world):
    for name in ('', 'a' * 256, 'with/slash', 'dot.ted', ' lead'):
        status, _b, _r = _create(world, name=name)
        assert status == 400, name
    assert _keypairs(world) == []


def test_duplicate_name_is_409_for_the_same_user_only(world):
    assert _create(world)[0] == 201
    status, body, _r = _create(world)
    assert status == 409
    assert body['conflictingRequest']['message'] == (
        "Key pair 'kp' already exists.")
    assert _create(world, caller=BOB)[0] == 201
    assert len(_keypairs(world)) == 2


def test_quota_on_key_pairs_is_403(world):
    world.insert('api', api_tables.quotas, project_id='projA',
                 resource='key_pairs', hard_limit=1)
    assert _create(world, name='one')[0] == 201
    status, body, _r = _create(world, name='two')
    assert status == 403
    assert body['forbidden']['message'] == (
        'Quota exceeded, too many key pairs.')
    assert [r['name'] for r in _keypairs(world)] == ['one']


def test_list_is_per_user_and_pages_from_2_35(world):
    for name in ('a', 'b', 'c'):
        assert _create(world, name=name)[0] == 201
    assert _create(world, name='bobs', caller=BOB)[0] == 201
    status, body, _r = world.client.get(V + '/os-keypairs', **ALICE)
    assert [k['keypair']['name'] for k in body['keypairs']] == [
        'a', 'b', 'c']
    assert set(body['keypairs'][0]['keypair']) == {
        'name', 'public_key', 'fingerprint', 'type'}
    status, body, _r = world.client.get(V + '/os-keypairs?limit=2',
                                        **ALICE)
    assert [k['keypair']['name'] for k in body['keypairs']] == ['a', 'b']
    assert body['keypairs_links'][0]['href'].endswith(
        '/os-keypairs?limit=2&marker=b')
    status, body, _r = world.client.get(
        V + '/os-keypairs?limit=2&marker=b', **ALICE)
    assert [k['keypair']['name'] for k in body['keypairs']] == ['c']
    status, body, _r = world.client.get(V + '/os-keypairs?marker=zz',
                                        **ALICE)
    assert status == 400
    # NOTE: below 2.35 limit and marker are not read.
    status, body, _r = world.client.get(V + '/os-keypairs?limit=1',
                                        version='2.34', **ALICE)
    assert len(body['keypairs']) == 3


def test_admin_names_another_user_from_2_10_others_may_not(world):
    assert _create(world)[0] == 201
    status, body, _r = world.client.get(V + '/os-keypairs?user_id=alice')
    assert [k['keypair']['name'] for k in body['keypairs']] == ['kp']
    status, _b, _r = world.client.get(V + '/os-keypairs/kp?user_id=alice',
                                      **BOB)
    assert status == 403
    # NOTE: below 2.10 user_id is not read: the admin's own key pairs.
    status, body, _r = world.client.get(V + '/os-keypairs?user_id=alice',
                                        version='2.9')
    assert body['keypairs'] == []
    status, body, _r = _create(world, name='for-bob', caller={},
                               user_id='bob')
    assert status == 201
    assert body['keypair']['user_id'] == 'bob'
    status, _b, _r = _create(world, name='x', user_id='bob')
    assert status == 403
    status, _b, _r = world.client.delete(
        V + '/os-keypairs/for-bob?user_id=bob')
    assert status == 204


def test_show_and_delete_unknown_are_404(world):
    status, body, _r = world.client.get(V + '/os-keypairs/nope', **ALICE)
    assert status == 404
    assert body['itemNotFound']['message'] == (
        'Keypair nope not found for user alice')
    status, _b, _r = world.client.delete(V + '/os-keypairs/nope', **ALICE)
    assert status == 404


def test_boot_with_key_name_stores_it_and_shows_it(world):
    assert _create(world)[0] == 201
    flavor = helpers.make_flavor(world.client)
    image = helpers.make_image(world.client, visibility='public')
    status, body = helpers.boot(world.client, flavor, image,
                                key_name='kp', **ALICE)
    assert status == 202, body
    [sent] = world.conductor.build_requests
    assert sent.key_name == 'kp'
    assert sent.key_data == PUBLIC_KEY
    status, body, _r = world.client.get(V + '/servers/%s' % sent.uuid,
                                        **ALICE)
    assert body['server']['key_name'] == 'kp'


def test_boot_with_unknown_key_name_is_400_and_builds_nothing(world):
    flavor = helpers.make_flavor(world.client)
    image = helpers.make_image(world.client, visibility='public')
    assert _create(world, caller=BOB)[0] == 201
    # NOTE: another user's key pair is not the caller's.
    for name in ('nope', 'kp'):
        status, body = helpers.boot(world.client, flavor, image,
                                    key_name=name, **ALICE)
        assert status == 400
        assert body['badRequest']['message'] == 'Invalid key_name provided.'
    assert world.conductor.builds == []
    assert world.rows('api', api_tables.build_requests) == []
    assert world.rows('cell1', cell_tables.instances) == []


def test_fingerprints_match_ssh_keygen():
    assert keypair_keys.ssh_fingerprint(PUBLIC_KEY) == FINGERPRINT
