# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /os-keypairs: a user's SSH (or x509) public keys.

Key pairs belong to a user. From 2.10 an admin names another user with
``user_id`` (query, or the create body); the rules allow an admin or the
key pair's own user. Below 2.92 a create without ``public_key`` generates
an RSA key pair and answers its private key once; from 2.92 the public
key is required. The key pair quota (``[quota] key_pairs``) limits how
many one user has. Servers name a key pair at boot (``key_name``).
"""

from services.api import errors
from services.api import keypair_keys
from services.api import policies
from services.api import quota
from services.api.records import keypairs as records
from services.api.schemas import keypairs as schema
from services.api import util

TYPE_VERSION = (2, 2)
USER_ID_VERSION = (2, 10)
PAGING_VERSION = (2, 35)
NO_GENERATION_VERSION = (2, 92)
_RULE = 'os_compute_api:os-keypairs:%s'


def _user_id(req, given=None):
    """The user whose key pairs the request names, after the policy."""
    ctx = util.context(req)
    if not util.at_least(req, USER_ID_VERSION):
        given = None
    return given or ctx.user_id


def _authorize(req, action, user_id):
    policies.authorize(req, _RULE % action, {'user_id': user_id})


def _summary(req, keypair):
    body = {'name': keypair['name'], 'public_key': keypair['public_key'],
            'fingerprint': keypair['fingerprint']}
    if util.at_least(req, TYPE_VERSION):
        body['type'] = keypair['type']
    return body


def list_keypairs(req):
    """GET /os-keypairs: the user's key pairs (paged from 2.35)."""
    user_id = _user_id(req, req.GET.get('user_id'))
    _authorize(req, 'index', user_id)
    limit = marker = None
    if util.at_least(req, PAGING_VERSION):
        limit = util.query_int(req, 'limit')
        marker = req.GET.get('marker')
    try:
        found = records.list_keypairs(util.context(req), user_id,
                                      limit=limit, marker=marker)
    except records.MarkerNotFound as exc:
        raise errors.BadRequest(str(exc))
    body = {'keypairs': [{'keypair': _summary(req, kp)} for kp in found]}
    if limit and len(found) == limit:
        query = 'limit=%d&marker=%s' % (limit, found[-1]['name'])
        if 'user_id' in req.GET:
            query = 'user_id=%s&%s' % (user_id, query)
        body['keypairs_links'] = [{
            'rel': 'next',
            'href': '%s?%s' % (util.self_link(req, 'os-keypairs'), query)}]
    return util.json_response(body)


def show_keypair(req):
    """GET /os-keypairs/{keypair_name}."""
    user_id = _user_id(req, req.GET.get('user_id'))
    _authorize(req, 'show', user_id)
    try:
        keypair = records.get_keypair(util.context(req), user_id,
                                      req.urlvars['keypair_name'])
    except records.KeypairNotFound as exc:
        raise errors.NotFound(str(exc))
    body = _summary(req, keypair)
    body.update({'user_id': keypair['user_id'], 'id': keypair['id'],
                 'created_at': util.iso(keypair['created_at']),
                 'updated_at': util.iso(keypair['updated_at']),
                 'deleted': False, 'deleted_at': None})
    return util.json_response({'keypair': body})


def _create_schema(req):
    for minimum, body_schema in schema.CREATE_BY_VERSION:
        if util.at_least(req, minimum):
            return body_schema
    return schema.CREATE


def _key_material(data, key_type):
    """(public key, fingerprint, private key or None) of a create body.

    :raises errors.BadRequest: a public key that is not one.
    """
    public_key = data.get('public_key')
    private_key = None
    if public_key is None:
        # NOTE: the 2.92 schema requires public_key; below it Nova makes
        # an ssh key pair (whatever the type asked for).
        private_key, public_key = keypair_keys.generate()
        key_type = 'ssh'
    try:
        fingerprint = keypair_keys.fingerprint(key_type, public_key)
    except keypair_keys.InvalidKey:
        raise errors.BadRequest('Keypair data is invalid: failed to '
                                'generate fingerprint')
    return public_key, fingerprint, private_key


def create_keypair(req):
    """POST /os-keypairs: import a public key, or generate a key pair.

    :returns: 200 (201 from 2.2) with the key pair, and ``private_key``
        when generated.
    :raises errors.BadRequest: bad body or public key.
    :raises errors.Forbidden: the quota or the policy.
    :raises errors.Conflict: the user has a key pair of that name.
    """
    data = util.extract_json(req, _create_schema(req))['keypair']
    user_id = _user_id(req, data.get('user_id'))
    _authorize(req, 'create', user_id)
    key_type = data.get('type', 'ssh')
    public_key, fingerprint, private_key = _key_material(data, key_type)
    ctx = util.context(req)
    conf = util.conf(req)
    limit = quota.limits(ctx, conf, ctx.project_id)['key_pairs']
    try:
        keypair = records.create_keypair(
            ctx, user_id, data['name'], key_type, public_key, fingerprint,
            limit=limit)
    except records.KeypairExists as exc:
        raise errors.Conflict(str(exc))
    except records.KeypairLimitExceeded as exc:
        raise errors.Forbidden(str(exc))
    body = _summary(req, keypair)
    body['user_id'] = keypair['user_id']
    if private_key is not None:
        body['private_key'] = private_key
    status = 201 if util.at_least(req, TYPE_VERSION) else 200
    return util.json_response({'keypair': body}, status=status)


def delete_keypair(req):
    """DELETE /os-keypairs/{keypair_name}: 202 (204 from 2.2)."""
    user_id = _user_id(req, req.GET.get('user_id'))
    _authorize(req, 'delete', user_id)
    try:
        records.delete_keypair(util.context(req), user_id,
                               req.urlvars['keypair_name'])
    except records.KeypairNotFound as exc:
        raise errors.NotFound(str(exc))
    return util.no_content(204 if util.at_least(req, TYPE_VERSION) else 202)
