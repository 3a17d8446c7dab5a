# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server actions: rebuild.

``{"rebuild": {"imageRef": ..., "name": ..., "metadata": ...}}`` re-creates
the guest from an image, on the same host, keeping the server's id,
flavor and allocation (doc/behaviours.md §rebuild). The API checks the body
(Nova's schema at the request's microversion), the policy, the lock and
the state, checks the image against the flavor as a boot does, then in
one write records the ``rebuild`` action, moves the task state to
``rebuilding`` and applies the new image and the user fields (the
hostname from 2.90); the conductor (``rebuild_instance``) re-checks the
host when the image changed and casts the compute. 202 with the server.
"""

import copy
import logging

import sqlalchemy as sa

from common.db import api_tables
from common.db import instance_records
from common.numa import constraints
from common.numa import exception as numa_exc
from common.objects import instance as instance_obj
from common.placement import guest_features
from services.api.actions import checks
from services.api import boot
from services.api import cell_hosts
from services.api import errors
from services.api.handlers import servers
from services.api import hostnames
from services.api import quota
from services.api import records
from services.api.schemas import types
from services.api import server_view
from services.api import util

LOG = logging.getLogger(__name__)

POLICY = 'os_compute_api:servers:rebuild'
# NOTE: Nova's rebuildable states (check_instance_state on rebuild).
VM_STATES = (instance_obj.ACTIVE, 'stopped', instance_obj.ERROR)
DESCRIPTION_VERSION = (2, 19)
KEY_NAME_VERSION = (2, 54)
USER_DATA_VERSION = (2, 57)
CERTIFICATES_VERSION = (2, 63)

_IP = {'type': 'string'}

REBUILD = {
    'type': 'object',
    'properties': {
        'imageRef': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'name': types.NAME_WITH_BLANKS,
        'adminPass': {'type': 'string'},
        'metadata': types.METADATA,
        'preserve_ephemeral': types.BOOLEAN,
        'OS-DCF:diskConfig': {'type': 'string', 'enum': ['AUTO', 'MANUAL']},
        'accessIPv4': {'type': 'string', 'format': 'ipv4'},
        'accessIPv6': {'type': 'string', 'format': 'ipv6'},
        'personality': {'type': 'array'},
    },
    'required': ['imageRef'],
    'additionalProperties': False,
}


def _variant(description, key_name, user_data, certificates, hostname=None):
    schema = copy.deepcopy(REBUILD)
    props = schema['properties']
    if hostname is not None:
        props['hostname'] = hostname
    if description:
        props['description'] = types.DESCRIPTION
    if key_name:
        props['key_name'] = {'type': ['string', 'null'], 'minLength': 1,
                             'maxLength': 255}
    if user_data:
        props.pop('personality')
        props['user_data'] = {'type': ['string', 'null']}
    if certificates:
        props['trusted_image_certificates'] = {
            'type': ['array', 'null'], 'items': {'type': 'string'}}
    return {'type': 'object', 'properties': {'rebuild': schema},
            'required': ['rebuild'], 'additionalProperties': False}


# NOTE: built once (validators are cached per schema object): the
# schema of each microversion range, newest first.
SCHEMAS = (
    (hostnames.FQDN_VERSION, _variant(True, True, True, True,
                                      hostnames.FQDN)),
    (hostnames.HOSTNAME_VERSION, _variant(True, True, True, True,
                                          hostnames.HOSTNAME)),
    (CERTIFICATES_VERSION, _variant(True, True, True, True)),
    (USER_DATA_VERSION, _variant(True, True, True, False)),
    (KEY_NAME_VERSION, _variant(True, True, False, False)),
    (DESCRIPTION_VERSION, _variant(True, False, False, False)),
    ((2, 1), _variant(False, False, False, False)),
)


def _schema(req):
    """Nova's rebuild schema at the request's microversion."""
    for version, schema in SCHEMAS:
        if util.at_least(req, version):
            return schema
    return SCHEMAS[-1][1]


def _refuse_unsupported(data):
    """400 for what Nova accepts and Berth cannot do (no guest agent, no
    config drive, no certificate validation): better refused than
    silently dropped.
    """
    for name in ('personality', 'user_data', 'trusted_image_certificates'):
        if data.get(name):
            raise errors.BadRequest(
                'Berth does not support %s on rebuild.' % name)


def _check_metadata_quota(ctxt, conf, metadata):
    """403 when ``metadata`` has more items than ``[quota] metadata_items``
    (Nova's MetadataLimitExceeded).
    """
    limit = quota.limits(ctxt, conf, ctxt.project_id).get('metadata_items')
    if limit is not None and 0 <= limit < len(metadata):
        raise errors.Forbidden('Maximum number of metadata items exceeds %d'
                               % limit)


def _values(req, instance, data, image):
    """The instance fields the rebuild request changes."""
    values = {'task_state': instance_obj.REBUILDING,
              'image_ref': image.id,
              'image_meta': dict(image.properties)}
    if 'name' in data:
        values['display_name'] = data['name']
    if 'metadata' in data:
        values['metadata'] = dict(data['metadata'])
    if 'description' in data:
        values['display_description'] = data['description']
    if 'hostname' in data:
        values['hostname'] = data['hostname']
    if 'accessIPv4' in data:
        values['access_ip_v4'] = data['accessIPv4'] or None
    if 'accessIPv6' in data:
        values['access_ip_v6'] = data['accessIPv6'] or None
    if 'key_name' in data:
        values.update(_key_pair(util.context(req), data['key_name']))
    return values


def _key_pair(ctxt, key_name):
    """key_name/key_data of the caller's key pair (None unsets, 2.54).

    :raises errors.BadRequest: no such key pair (Nova's message).
    """
    if key_name is None:
        return {'key_name': None, 'key_data': None}
    found = _public_key(ctxt, ctxt.user_id, key_name)
    if found is None:
        raise errors.BadRequest('Invalid key_name provided.')
    return {'key_name': key_name, 'key_data': found}


@records.reader_connection
def _public_key(ctxt, user_id, name):
    """The public key of ``user_id``'s key pair ``name``, or None."""
    keys = api_tables.key_pairs
    row = ctxt.connection.execute(sa.select(keys.c.public_key).where(
        keys.c.user_id == user_id, keys.c.name == name)).first()
    return None if row is None else (row.public_key or '')


def _password(conf, data):
    """The adminPass answered (None when [api] enable_instance_password
    is False): the request's, or a generated one, as Nova.
    """
    if not conf.api.enable_instance_password:
        return None
    if data.get('adminPass'):
        return data['adminPass']
    return servers.generate_password(conf.password_length)


NUMA_CONFLICT = ("An instance's NUMA topology cannot be changed as part of "
                 "a rebuild. The image provided is invalid for this "
                 "instance.")


def _check_numa(instance, image):
    """400 when the new image asks for another NUMA topology than the old
    one (Nova's ImageNUMATopologyRebuildConflict) or for guest features
    the flavor rules out: a rebuild keeps the server's placement.
    """
    flavor = instance.flavor
    try:
        guest_features.validate(flavor, image)
        new = constraints.get_constraints(flavor, image.properties)
        old = constraints.get_constraints(flavor, instance.image_meta or {})
    except (numa_exc.NUMARequestInvalid,
            guest_features.GuestFeatureInvalid) as exc:
        raise errors.BadRequest(str(exc))
    new = None if new is None else new.to_primitive()
    old = None if old is None else old.to_primitive()
    if new != old:
        raise errors.BadRequest(NUMA_CONFLICT)


def _undo(ctxt, cell, instance, values):
    """Put back what the rebuild changed when its cast failed, so that
    the server is not left ``rebuilding`` with nobody working on it.
    """
    restore = {name: getattr(instance, name) for name in values}
    restore['task_state'] = None
    try:
        instance_records.update_instance(
            ctxt, cell_hosts.database(cell), instance.uuid, restore,
            expected_task_state=[instance_obj.REBUILDING], brief=True)
    except Exception:
        LOG.exception('Could not undo the rebuild of %s', instance.uuid)


def rebuild(req, value):
    """``rebuild``: 202 with the server body (and its adminPass).

    :raises errors.BadRequest: a bad body, an unknown or inactive image,
        or one too big for the flavor.
    :raises errors.Conflict: locked (non-admins) or in a state Nova does
        not rebuild from.
    :raises errors.ServiceUnavailable: the conductor could not be told
        (the server is put back as it was).
    """
    util.validate({'rebuild': value}, _schema(req))
    data = value
    _refuse_unsupported(data)
    instance, cell = checks.find(req, POLICY, fault=True)
    ctxt = util.context(req)
    conf = util.conf(req)
    checks.check_locked(ctxt, instance)
    checks.check_state(instance, 'rebuild', VM_STATES)
    if 'metadata' in data:
        _check_metadata_quota(ctxt, conf, data['metadata'])
    flavor = instance.flavor.to_primitive() if hasattr(
        instance.flavor, 'to_primitive') else dict(instance.flavor or {})
    image = boot.image_for_boot(ctxt, conf, data['imageRef'], flavor)
    if image.id != instance.image_ref:
        _check_numa(instance, image)
    orig_image_ref = instance.image_ref
    orig_vm_state = instance.vm_state
    values = _values(req, instance, data, image)
    updated = checks.begin(req, instance, cell, 'rebuild', 'rebuild',
                           values)
    try:
        boot.conductor_api().rebuild_instance(
            ctxt, instance_uuid=instance.uuid, image_ref=image.id,
            orig_image_ref=orig_image_ref, orig_vm_state=orig_vm_state,
            image_meta=image.to_meta(),
            preserve_ephemeral=bool(data.get('preserve_ephemeral', False)),
            orig_image_meta=dict(instance.image_meta or {}))
    except Exception as exc:
        _undo(ctxt, cell, instance, values)
        LOG.exception('Could not cast the rebuild of %s', instance.uuid)
        raise errors.ServiceUnavailable(
            'The rebuild of %s could not be started: %s'
            % (instance.uuid, exc))
    server = server_view.Viewer(req).detail(updated, cell)
    password = _password(conf, data)
    if password is not None:
        server['adminPass'] = password
    return util.json_response({'server': server}, status=202)


ACTIONS = {'rebuild': rebuild}
