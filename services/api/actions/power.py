# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server actions: os-stop, os-start, reboot, pause/unpause, suspend/resume.

Each one is Nova's: the policy, the lock (409 for a non-admin while the
server is locked), the vm and task states it may start from (409 with
Nova's message otherwise), then in one write the task state it starts
(``powering-off``...) and the instance action (``stop``...), then a cast
to the server's compute host, which does the rest (see
:mod:`services.compute.power`). The answer is 202 with no body.
"""

import collections

from common.objects import instance as inst
from services.api.actions import checks
from services.api import deletion
from services.api import errors
from services.api.schemas import server_actions as schemas
from services.api import util

# NOTE: Nova's ALLOW_SOFT_REBOOT / ALLOW_HARD_REBOOT vm states and the
# task states a hard reboot may interrupt (task_states.ALLOW_REBOOT).
SOFT_REBOOT_VM_STATES = (inst.ACTIVE,)
HARD_REBOOT_VM_STATES = (inst.ACTIVE, inst.STOPPED, inst.PAUSED,
                         inst.SUSPENDED, inst.ERROR)
HARD_REBOOT_TASK_STATES = (None, inst.REBOOTING, inst.REBOOT_PENDING,
                           inst.REBOOT_STARTED, inst.REBOOTING_HARD,
                           inst.RESUMING, inst.UNPAUSING, inst.PAUSING,
                           inst.SUSPENDING)

#: One action without arguments: its body key, its name in conflict
#: messages and instance actions, its policy, the vm states it starts
#: from, the task state it sets and the compute RPC method it casts.
Simple = collections.namedtuple(
    'Simple', 'key method rule vm_states task_state rpc')

SIMPLE = (
    Simple('os-stop', 'stop', 'os_compute_api:servers:stop',
           (inst.ACTIVE, inst.ERROR), inst.POWERING_OFF, 'stop_instance'),
    Simple('os-start', 'start', 'os_compute_api:servers:start',
           (inst.STOPPED,), inst.POWERING_ON, 'start_instance'),
    Simple('pause', 'pause', 'os_compute_api:os-pause-server:pause',
           (inst.ACTIVE,), inst.PAUSING, 'pause_instance'),
    Simple('unpause', 'unpause', 'os_compute_api:os-pause-server:unpause',
           (inst.PAUSED,), inst.UNPAUSING, 'unpause_instance'),
    Simple('suspend', 'suspend', 'os_compute_api:os-suspend-server:suspend',
           (inst.ACTIVE,), inst.SUSPENDING, 'suspend_instance'),
    Simple('resume', 'resume', 'os_compute_api:os-suspend-server:resume',
           (inst.SUSPENDED,), inst.RESUMING, 'resume_instance'),
)


def _start(req, instance, cell, method, task_state, expected, rpc,
           **kwargs):
    """Begin the action and cast it to the server's host; 202.

    :raises errors.Conflict: the server has no host (it never got one, or
        its build failed): Nova's "Instance <uuid> is not ready".
    """
    if not instance.host:
        raise errors.Conflict('Instance %s is not ready' % instance.uuid)
    instance = checks.begin(req, instance, cell, method, method,
                            {'task_state': task_state}, expected)
    ctxt = util.context(req)
    getattr(deletion.compute_api(cell), rpc)(ctxt, instance.host,
                                             instance.uuid, **kwargs)
    return util.no_content(202)


def _simple_handler(spec):
    schema = schemas.no_argument(spec.key)

    def handler(req, value):
        util.validate({spec.key: value}, schema)
        instance, cell = checks.find(req, spec.rule)
        checks.check_locked(util.context(req), instance)
        checks.check_state(instance, spec.method, spec.vm_states)
        return _start(req, instance, cell, spec.method, spec.task_state,
                      (None,), spec.rpc)
    handler.__doc__ = '``%s``: see the module doc.' % spec.key
    return handler


def reboot(req, value):
    """``reboot`` {type: SOFT|HARD}: SOFT from ACTIVE with no task; HARD
    also from SHUTOFF, PAUSED, SUSPENDED and ERROR, and over a soft
    reboot or a pause/suspend/resume in progress (Nova's rules).
    """
    util.validate({'reboot': value}, schemas.REBOOT)
    reboot_type = value['type'].upper()
    instance, cell = checks.find(req, 'os_compute_api:servers:reboot')
    checks.check_locked(util.context(req), instance)
    if reboot_type == 'SOFT':
        checks.check_state(instance, 'reboot', SOFT_REBOOT_VM_STATES)
        task_state, expected = inst.REBOOTING, (None,)
    else:
        checks.check_state(instance, 'reboot', HARD_REBOOT_VM_STATES,
                           HARD_REBOOT_TASK_STATES)
        task_state, expected = inst.REBOOTING_HARD, HARD_REBOOT_TASK_STATES
    return _start(req, instance, cell, 'reboot', task_state, expected,
                  'reboot_instance', reboot_type=reboot_type)


ACTIONS = {spec.key: _simple_handler(spec) for spec in SIMPLE}
ACTIONS['reboot'] = reboot
