# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""GET /os-berth-capacity/headroom: how many more servers of a flavor fit.

A Berth extension (doc/api.md), admin only by default
(``berth:capacity:headroom``). The request spec is built as a boot
builds it (flavor by id or name, image by id or name, zone, hints and
server group); a scheduler answers it (its ``headroom`` RPC), running the
real pipeline without claiming (services/scheduler/capacity).
"""

import logging

import oslo_messaging as messaging

from common.db import cell_access as cell_access_mod
from common.db import cells
from common.db import group_setup
from common import exception
from common.objects import request_spec as spec_obj
from services.api import boot
from services.api import errors
from services.api import images
from services.api import policies
from services.api.records import flavors as flavor_records
from services.api.schemas import capacity as schema
from services.api import util

LOG = logging.getLogger(__name__)


def _query(req):
    query = {}
    for name in req.GET:
        values = req.GET.getall(name)
        if name == 'hint':
            query[name] = values
        elif len(values) > 1:
            raise errors.BadRequest('Query parameter %s is given more than '
                                    'once.' % name)
        else:
            query[name] = values[0]
    util.validate(query, schema.HEADROOM_QUERY)
    return query


def _flavor(ctx, ref):
    try:
        return flavor_records.get_flavor(ctx, ref)
    except flavor_records.FlavorNotFound:
        pass
    found = [f for f in flavor_records.list_flavors(ctx, is_public=None)
             if f['name'] == ref]
    if not found:
        raise errors.BadRequest('Flavor %s could not be found.' % ref)
    return found[0]


def _image(ctx, conf, ref):
    if not ref:
        return images.Image(id=None, name='', status='active')
    try:
        return images.find_image(ctx, conf, ref)
    except images.ImageNotFound as exc:
        raise errors.BadRequest(str(exc))
    except images.ImageServiceUnavailable as exc:
        raise errors.ServiceUnavailable(str(exc))


def build_spec(req, query):
    """The RequestSpec of one server of the query's request.

    :raises errors.BadRequest: unknown flavor, image or group, or a
        flavor and image that cannot go together.
    """
    ctx = util.context(req)
    conf = util.conf(req)
    flavor = _flavor(ctx, query['flavor'])
    image = _image(ctx, conf, query.get('image'))
    hints = {}
    for item in query.get('hint', []):
        key, value = item.split('=', 1)
        hints.setdefault(key, []).append(value)
    spec = spec_obj.RequestSpec(
        project_id=query.get('project_id') or ctx.project_id,
        user_id=ctx.user_id, flavor=flavor_records.to_object(flavor),
        image=image.to_meta(), availability_zone=query.get('az'),
        num_instances=1, scheduler_hints=hints,
        numa_topology=boot.numa_for_boot(flavor, image))
    try:
        group_setup.setup_instance_group(
            ctx, cell_access_mod.CellAccess(cells.api_db), spec)
    except exception.InstanceGroupNotFound as exc:
        raise errors.BadRequest(str(exc))
    return spec


def scheduler_api():
    """The scheduler RPC client (a function, so tests can replace it)."""
    from services.scheduler import rpcapi as scheduler_rpcapi
    return scheduler_rpcapi.SchedulerAPI()


def headroom(req):
    """GET /os-berth-capacity/headroom (admin): the Headroom answer."""
    policies.authorize(req, 'berth:capacity:headroom')
    query = _query(req)
    spec = build_spec(req, query)
    try:
        answer = scheduler_api().headroom(util.context(req), spec,
                                          aggregate=query.get('aggregate'))
    except messaging.MessagingTimeout:
        raise errors.ServiceUnavailable('No scheduler answered the headroom '
                                        'request in time.')
    return util.json_response({'headroom': answer})
