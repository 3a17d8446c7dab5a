# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /allocations and /resource_providers/{uuid}/allocations.

Writing a consumer's allocations always replaces all of them: the body is
the complete new picture, checked against capacity as a whole and written
in one transaction (see :mod:`services.placement.objects.allocation`).
"""

from services.placement import errors
from services.placement.objects import allocation as allocation_obj
from services.placement.objects import consumer as consumer_obj
from services.placement.objects import resource_provider as rp_obj
from services.placement import policies
from services.placement.schemas import allocation as schema
from services.placement import util


def _uuid_or_raw(value):
    # NOTE: clients may write a uuid without dashes or in capitals; the
    # database keeps the canonical form, so look things up by it.
    return util.normalize_uuid(value) if util.is_uuid_like(value) else value


def _consumer_uuid(req):
    value = req.urlvars['consumer_uuid']
    if not util.is_uuid_like(value):
        raise errors.BadRequest('Malformed consumer_uuid: %s' % value)
    return util.normalize_uuid(value)


def consumer_request(version, consumer_uuid, entry):
    """A :class:`ConsumerRequest` from one validated dict-form body.

    :param version: the request's microversion; it decides which fields
        count (project/user from 1.8, generation from 1.28, type 1.38).
    """
    allocations = {_uuid_or_raw(rp): dict(value['resources'])
                   for rp, value in entry['allocations'].items()}
    return _request(version, consumer_uuid, allocations, entry)


def _request(version, consumer_uuid, allocations, entry):
    kwargs = {}
    if version >= (1, 8):
        kwargs.update(project_id=entry['project_id'],
                      user_id=entry['user_id'])
    if version >= (1, 28):
        kwargs['generation'] = entry['consumer_generation']
    if version >= (1, 38):
        kwargs['consumer_type'] = entry['consumer_type']
    # NOTE: ``mappings`` (1.34) only tells the client which request group
    # each provider satisfied; there is nothing to store.
    return allocation_obj.ConsumerRequest(consumer_uuid, allocations,
                                          **kwargs)


def list_for_consumer(req):
    """GET /allocations/{consumer_uuid}

    An unknown consumer has no allocations: 200 with an empty dict.
    """
    policies.authorize(req, 'placement:allocations:list')
    ctx = util.context(req)
    version = util.version(req)
    consumer_uuid = _uuid_or_raw(req.urlvars['consumer_uuid'])
    consumer, rows = allocation_obj.get_for_consumer(ctx, consumer_uuid)
    allocations = {}
    for row in rows:
        entry = allocations.setdefault(
            row['resource_provider'],
            {'generation': row['generation'], 'resources': {}})
        entry['resources'][row['resource_class']] = row['used']
    body = {'allocations': allocations}
    if allocations and consumer is not None:
        if version >= (1, 12):
            body['project_id'] = consumer['project_id']
            body['user_id'] = consumer['user_id']
        if version >= (1, 28):
            body['consumer_generation'] = consumer['generation']
        if version >= (1, 38):
            body['consumer_type'] = (consumer['consumer_type'] or
                                     consumer_obj.UNKNOWN_TYPE)
    last_modified = util.latest(
        *[row['updated_at'] or row['created_at'] for row in rows])
    return util.json_response(req, body, last_modified=last_modified)


def list_for_resource_provider(req):
    """GET /resource_providers/{uuid}/allocations"""
    policies.authorize(req, 'placement:resource_providers:allocations:list')
    ctx = util.context(req)
    provider, rows = rp_obj.read_with(ctx, _uuid_or_raw(req.urlvars['uuid']),
                                      allocation_obj.get_for_provider)
    allocations = {}
    for row in rows:
        entry = allocations.setdefault(row['consumer_id'], {'resources': {}})
        entry['resources'][row['resource_class']] = row['used']
    body = {'resource_provider_generation': provider['generation'],
            'allocations': allocations}
    last_modified = util.latest(
        *[row['updated_at'] or row['created_at'] for row in rows])
    return util.json_response(req, body, last_modified=last_modified)


def set_allocations_for_consumer(req):
    """PUT /allocations/{consumer_uuid}

    Replaces every allocation of the consumer; 204 on success.
    """
    policies.authorize(req, 'placement:allocations:update')
    ctx = util.context(req)
    version = util.version(req)
    data = util.extract_json(req, schema.put_schema(version))
    consumer_uuid = _consumer_uuid(req)
    if version >= (1, 12):
        request = consumer_request(version, consumer_uuid, data)
    else:
        allocations = {}
        for item in data['allocations']:
            rp_uuid = _uuid_or_raw(item['resource_provider']['uuid'])
            allocations.setdefault(rp_uuid, {}).update(item['resources'])
        request = _request(version, consumer_uuid, allocations, data)
    allocation_obj.replace_all(ctx, [request])
    return util.no_content(req)


def set_allocations(req):
    """POST /allocations (1.13): many consumers at once, all or nothing.

    An empty ``allocations`` removes that consumer's allocations.
    """
    util.require_version(req, (1, 13))
    policies.authorize(req, 'placement:allocations:manage')
    ctx = util.context(req)
    version = util.version(req)
    data = util.extract_json(req, schema.post_schema(version))
    requests = [consumer_request(version, _uuid_or_raw(uuid), entry)
                for uuid, entry in sorted(data.items())]
    allocation_obj.replace_all(ctx, requests)
    return util.no_content(req)


def delete_allocations(req):
    """DELETE /allocations/{consumer_uuid}; 404 when it holds none."""
    policies.authorize(req, 'placement:allocations:delete')
    ctx = util.context(req)
    allocation_obj.delete_for_consumer(
        ctx, _uuid_or_raw(req.urlvars['consumer_uuid']))
    return util.no_content(req)
