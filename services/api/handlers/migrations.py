# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handler for GET /os-migrations: every cell's server moves (admin).

Nova's view, per microversion:

* 2.1: id, status, instance, source and destination host and node,
  the flavors' ids, times; filters ``host`` (either side), ``status``,
  ``instance_uuid``, ``source_compute``, ``migration_type``, ``hidden``;
  any other parameter is ignored.
* 2.23: ``migration_type`` in each migration, and ``links`` to
  ``/servers/{id}/migrations/{id}`` for a live migration in progress.
* 2.59: pages (``limit``, ``marker`` a migration uuid, a
  ``migrations_links`` next link after a full page), ``changes-since``,
  the ``uuid`` field; an unknown parameter is a 400.
* 2.66: ``changes-before``. 2.80: ``user_id`` and ``project_id``, as
  fields and filters.

Hidden migrations are never listed. The cells are read by
:mod:`services.api.migration_lookup`.
"""

import urllib.parse

import jsonschema
from oslo_utils import strutils

from common.db import migration_records
from common.objects import migration as migration_obj
from common.wsgi import util as wsgi_util
from services.api import errors
from services.api import migration_lookup
from services.api import policies
from services.api.records import flavors as flavor_records
from services.api.schemas import migrations as schema
from services.api import util

TYPE_VERSION = (2, 23)
PAGING_VERSION = (2, 59)
CHANGES_BEFORE_VERSION = (2, 66)
USER_PROJECT_VERSION = (2, 80)
# NOTE: the statuses of a live migration that /servers/{id}/migrations
# shows (and so that os-migrations links to), as Nova.
LIVE_IN_PROGRESS = (migration_obj.QUEUED, migration_obj.PREPARING,
                    migration_obj.RUNNING, migration_obj.POST_MIGRATING)
_FILTERS = ('host', 'status', 'instance_uuid', 'source_compute',
            'migration_type')


def _schema(req):
    for version, query_schema in ((USER_PROJECT_VERSION, schema.QUERY_V280),
                                  (CHANGES_BEFORE_VERSION,
                                   schema.QUERY_V266),
                                  (PAGING_VERSION, schema.QUERY_V259)):
        if util.at_least(req, version):
            return query_schema
    return schema.QUERY_V21


def _query_error(name, value, reason):
    return errors.BadRequest(
        'Invalid input for query parameters %s. Value: %s. %s' % (
            name, value, reason))


def query(req, query_schema):
    """The request's query (name -> list of values), validated.

    :raises errors.BadRequest: Nova's "Invalid input for query
        parameters ..." for an unknown parameter (where ``query_schema``
        refuses them) or a value of the wrong shape.
    """
    found = req.GET.dict_of_lists()
    if not query_schema.get('additionalProperties', True):
        for name in found:
            if name not in query_schema['properties']:
                raise _query_error(
                    name, ','.join(found[name]),
                    "Additional properties are not allowed ('%s' was "
                    "unexpected)" % name)
    validator = wsgi_util.validator_for(query_schema)
    if not validator.is_valid(found):
        error = jsonschema.exceptions.best_match(
            validator.iter_errors(found))
        path = list(error.absolute_path)
        name = path[0] if path else 'query'
        raise _query_error(name, ','.join(found.get(name, [])),
                           error.message)
    return found


def _time(name, values):
    """The last of ``values`` as a naive UTC datetime (Nova's message
    for anything that is no ISO 8601 date-time).
    """
    if not values:
        return None
    try:
        return util.to_naive(values[-1])
    except ValueError:
        raise _query_error(name, values[-1],
                           "'%s' is not a 'date-time'" % values[-1])


def _filters(req, found):
    """The :class:`migration_records.Filters` of a validated query."""
    values = {name: found[name][-1] for name in _FILTERS if name in found}
    since = before = None
    if util.at_least(req, PAGING_VERSION):
        since = _time('changes-since', found.get('changes-since'))
    if util.at_least(req, CHANGES_BEFORE_VERSION):
        before = _time('changes-before', found.get('changes-before'))
    if since and before and before < since:
        raise errors.BadRequest('The value of changes-since must be less '
                                'than or equal to changes-before.')
    if util.at_least(req, USER_PROJECT_VERSION):
        for name in ('user_id', 'project_id'):
            if name in found:
                values[name] = found[name][-1]
    return migration_records.Filters(changes_since=since,
                                     changes_before=before,
                                     of_live_servers=True, **values)


def _hidden_asked(found):
    # NOTE: as Nova, ``hidden=true`` asks for hidden migrations only, and
    # the view never shows one: the list is empty.
    values = found.get('hidden')
    return bool(values) and strutils.bool_from_string(values[-1])


def _page_size(req, found):
    """(limit, marker) from 2.59; (None, None) below (every migration)."""
    if not util.at_least(req, PAGING_VERSION):
        return None, None
    max_limit = util.conf(req).api.max_limit
    limit = found.get('limit')
    limit = max_limit if not limit else min(int(limit[-1]), max_limit)
    marker = found.get('marker')
    return limit, (marker[-1] if marker else None)


def _flavor_ids(ctx, migrations):
    flavorids = []
    for migration in migrations:
        for flavor in (migration.old_flavor, migration.new_flavor):
            if flavor is not None:
                flavorids.append(flavor.flavorid)
    return flavor_records.row_ids(ctx, flavorids)


def _flavor_id(flavor, ids):
    return None if flavor is None else ids.get(flavor.flavorid)


def _view(req, migration, flavor_ids):
    body = {
        'id': migration.id,
        'status': migration.status,
        'instance_uuid': migration.instance_uuid,
        'source_compute': migration.source_compute,
        'source_node': migration.source_node,
        'dest_compute': migration.dest_compute,
        'dest_node': migration.dest_node,
        'dest_host': migration.dest_host,
        'old_instance_type_id': _flavor_id(migration.old_flavor,
                                           flavor_ids),
        'new_instance_type_id': _flavor_id(migration.new_flavor,
                                           flavor_ids),
        'created_at': util.iso_micro(migration.created_at),
        'updated_at': util.iso_micro(migration.updated_at),
    }
    if util.at_least(req, TYPE_VERSION):
        body['migration_type'] = migration.migration_type
        if (migration.migration_type == migration_obj.LIVE_MIGRATION and
                migration.status in LIVE_IN_PROGRESS):
            body['links'] = util.links(
                req, 'servers/%s/migrations' % migration.instance_uuid,
                migration.id)
    if util.at_least(req, PAGING_VERSION):
        body['uuid'] = migration.uuid
    if util.at_least(req, USER_PROJECT_VERSION):
        body['user_id'] = migration.user_id
        body['project_id'] = migration.project_id
    return body


def _next_links(req, bodies, limit):
    """``migrations_links``: the request's query with the last migration's
    uuid as ``marker``, after a full page.
    """
    if not limit or len(bodies) != limit:
        return None
    params = [(k, v) for k, v in req.GET.items() if k != 'marker']
    params.append(('marker', bodies[-1]['uuid']))
    return [{'rel': 'next', 'href': '%s?%s' % (
        util.self_link(req, 'os-migrations'),
        urllib.parse.urlencode(params))}]


def list_migrations(req):
    """GET /os-migrations: the migrations of every cell, newest first.

    :raises errors.BadRequest: a query Nova refuses at this microversion,
        or (2.59) a marker that names no migration.
    :raises errors.Forbidden: ``os_compute_api:os-migrations:index``.
    """
    policies.authorize(req, 'os_compute_api:os-migrations:index')
    found = query(req, _schema(req))
    filters = _filters(req, found)
    limit, marker = _page_size(req, found)
    ctx = util.context(req)
    migrations = migration_lookup.list_migrations(ctx, filters,
                                                  marker=marker, limit=limit)
    if _hidden_asked(found):
        migrations = []
    flavor_ids = _flavor_ids(ctx, migrations)
    bodies = [_view(req, m, flavor_ids) for m in migrations]
    answer = {'migrations': bodies}
    if util.at_least(req, PAGING_VERSION):
        links = _next_links(req, bodies, limit)
        if links:
            answer['migrations_links'] = links
    return util.json_response(answer)


ROUTES = {'/os-migrations': {'GET': list_migrations}}
