# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handler for GET /servers/{server_id}/diagnostics (admin).

The server's compute agent asks its driver (an RPC call with a timeout,
:meth:`services.compute.rpcapi.ComputeAPI.get_diagnostics`). From 2.48
the body is Nova's standard one (state, driver, hypervisor... with
per-CPU, NIC and disk details); below it, the free-form flat dict older
Nova drivers returned (``cpu0_time``, ``memory`` in KiB, ``vda_read``...).
As in Nova, a server not on a host, or not running, is a 409.
"""

import oslo_messaging as messaging

from common.objects import instance as instance_obj
from services.api import deletion
from services.api import errors
from services.api.handlers import servers as server_handlers
from services.api import util

STANDARD_VERSION = (2, 48)
_POWER_STATES = {0: 'pending', 1: 'running', 3: 'paused', 4: 'shutdown',
                 6: 'crashed', 7: 'suspended'}


def _legacy(diag):
    """The pre-2.48 flat dict of a standard diagnostics dict."""
    flat = {'cpu%d_time' % cpu['id']: cpu['time']
            for cpu in diag['cpu_details']}
    memory = diag['memory_details']
    flat['memory'] = memory['maximum'] * 1024
    for i, disk in enumerate(diag['disk_details']):
        name = 'vd%s' % chr(ord('a') + i)
        flat.update({name + '_read': disk['read_bytes'],
                     name + '_read_req': disk['read_requests'],
                     name + '_write': disk['write_bytes'],
                     name + '_write_req': disk['write_requests'],
                     name + '_errors': disk['errors_count']})
    return flat


def _ask(ctx, instance, cell):
    try:
        answer = deletion.compute_api(cell).get_diagnostics(
            ctx, instance.host, instance.uuid)
    except messaging.MessagingTimeout:
        raise errors.APIError('The compute service of host %s did not '
                              'answer in time.' % instance.host,
                              status=504)
    error = answer.get('error')
    if error == 'not-implemented':
        raise errors.NotImplementedYet('Unable to get diagnostics, '
                                       'functionality not implemented')
    if error is not None:
        raise errors.Conflict('Instance %s is not ready' % instance.uuid)
    return answer['diagnostics']


def show_diagnostics(req):
    """GET /servers/{server_id}/diagnostics.

    :raises errors.Conflict: no host yet, or the server is not running.
    :raises errors.NotImplementedYet: the driver has no diagnostics.
    """
    instance, cell = server_handlers.find_authorized(
        req, 'os_compute_api:os-server-diagnostics')
    if cell is None or not instance.host:
        raise errors.Conflict('Instance %s is not ready' % instance.uuid)
    if instance.power_state != instance_obj.RUNNING:
        raise errors.Conflict(
            "Cannot 'get_diagnostics' instance %s while it is in power "
            "state %s" % (instance.uuid, _POWER_STATES.get(
                instance.power_state, 'pending')))
    diag = _ask(util.context(req), instance, cell)
    if not util.at_least(req, STANDARD_VERSION):
        diag = _legacy(diag)
    return util.json_response(diag)
