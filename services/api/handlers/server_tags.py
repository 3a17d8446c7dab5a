# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /servers/{server_id}/tags (microversion 2.26).

As Nova: list, replace all (PUT with ``{"tags": [...]}``), delete all,
and check (204/404), add (201 with a Location, 204 when present) or
delete (204/404) one tag. At most 50 tags a server, each 1-60 characters
without ``/`` or ``,``. Writes are refused (409) unless the server is
active, paused, suspended or stopped (a server still being built has no
row to tag yet). Tags are rows of the cell's ``tags`` table
(:mod:`common.db.instance_tags`).
"""

from common.db import instance_tags
from common import exception
from common.wsgi import util as wsgi_util
from services.api.actions import checks
from services.api import cell_hosts
from services.api import errors
from services.api.schemas import server_metadata as schema
from services.api import server_view
from services.api import util

_RULE = 'os_compute_api:os-server-tags:%s'
WRITABLE_STATES = ('active', 'paused', 'suspended', 'stopped')


def _find(req, action):
    util.require_version(req, server_view.TAGS_VERSION)
    return checks.find(req, _RULE % action)


def _writable(req, action, method):
    instance, cell = _find(req, action)
    checks.check_state(instance, method, WRITABLE_STATES, checks.ANY)
    return instance, cell_hosts.database(cell)


def _tags(req, instance, cell):
    if cell is None:
        return list(instance.tags or [])
    return instance_tags.get_tags(util.context(req),
                                  cell_hosts.database(cell), instance.uuid)


def _no_tag(instance, tag, noun='Server'):
    return errors.NotFound("%s %s has no tag '%s'" % (noun, instance.uuid,
                                                      tag))


def _tag_from_url(req):
    tag = req.urlvars['tag']
    validator = wsgi_util.validator_for(schema.TAG)
    for error in validator.iter_errors(tag):
        raise errors.BadRequest("Tag '%s' is invalid. It must be a non "
                                "empty string without characters '/' and "
                                "','. Validation error message: %s"
                                % (tag, error.message))
    return tag


def _gone(instance):
    return errors.NotFound('Instance %s could not be found.' % instance.uuid)


def list_tags(req):
    """GET /servers/{server_id}/tags."""
    instance, cell = _find(req, 'index')
    return util.json_response({'tags': _tags(req, instance, cell)})


def show_tag(req):
    """GET /servers/{server_id}/tags/{tag}: 204 if the server has it."""
    instance, cell = _find(req, 'show')
    tag = req.urlvars['tag']
    if tag not in _tags(req, instance, cell):
        raise _no_tag(instance, tag)
    return util.no_content(204)


def update_tags(req):
    """PUT /servers/{server_id}/tags: replace every tag."""
    instance, database = _writable(req, 'update_all', 'update tags')
    tags = util.extract_json(req, schema.TAGS)['tags']
    try:
        stored = instance_tags.replace_tags(util.context(req), database,
                                            instance.uuid, tags)
    except instance_tags.TooManyTags as exc:
        raise errors.BadRequest(str(exc))
    except exception.InstanceNotFound:
        raise _gone(instance)
    return util.json_response({'tags': stored})


def update_tag(req):
    """PUT /servers/{server_id}/tags/{tag}: 201 added, 204 present.

    NOTE: as Nova, a server with 50 tags is refused (400) even when it
    has this one.
    """
    instance, database = _writable(req, 'update', 'update tag')
    tag = _tag_from_url(req)
    try:
        added = instance_tags.add_tag(util.context(req), database,
                                      instance.uuid, tag)
    except instance_tags.TooManyTags as exc:
        raise errors.BadRequest(str(exc))
    except exception.InstanceNotFound:
        raise _gone(instance)
    if not added:
        return util.no_content(204)
    resp = util.no_content(201)
    resp.headers['Location'] = util.self_link(req, 'servers', instance.uuid,
                                              'tags', tag)
    return resp


def delete_tags(req):
    """DELETE /servers/{server_id}/tags: 204."""
    instance, database = _writable(req, 'delete_all', 'delete tags')
    instance_tags.remove_all(util.context(req), database, instance.uuid)
    return util.no_content(204)


def delete_tag(req):
    """DELETE /servers/{server_id}/tags/{tag}: 204, 404 without it."""
    instance, database = _writable(req, 'delete', 'delete tag')
    tag = req.urlvars['tag']
    if not instance_tags.remove_tag(util.context(req), database,
                                    instance.uuid, tag):
        raise _no_tag(instance, tag, noun='Instance')
    return util.no_content(204)
