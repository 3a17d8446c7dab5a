# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Power actions on this host: stop, start, reboot, pause/unpause,
suspend/resume.

The API has set the task state (``powering-off``...) and recorded the
instance action; the cast lands here. Under the instance's lock (builds
and deletes of the same instance wait):

1. the event ``compute_<rpc method>`` starts in the same conductor call
   that checks the task state is still the action's (a reboot moves on to
   ``reboot_started``/``reboot_started_hard``, as Nova's); a server
   deleted or reset meanwhile ends the action here, quietly;
2. ``instance.<notification>.start``;
3. the driver acts on the guest;
4. vm_state, the guest's power state as the driver now reports it and no
   task, with the event's finish, in one call; ``instance.<...>.end``.

A driver failure never leaves the server in its task state: the fault is
recorded, the event finishes ``Error``, the task state goes back to None
with the vm_state unchanged (Nova's ``reverts_task_state``), except a
failed reboot, which leaves the server ACTIVE only if its guest still
runs and in ERROR otherwise, as Nova does; ``instance.<...>.error``
carries the exception. Placement allocations are not touched: a stopped
server keeps its resources, as in Nova.

An agent that restarts runs again the power actions its crash
interrupted (:func:`recover`), as Nova's ``init_host`` does, so no server
stays in ``powering-off`` or ``reboot_started`` for ever.
"""

import collections
import logging
import traceback

from common import notifications
from common.objects import instance as inst
from services.compute import utils

LOG = logging.getLogger(__name__)

#: One power action: the task states the compute may find it in, the one
#: it moves to while the driver works, the driver method, the vm_state
#: at the end, the compute event and the notification's action name.
Action = collections.namedtuple(
    'Action', 'task_states working driver_method vm_state event '
              'notification')

_SOFT_REBOOT = (inst.REBOOTING, inst.REBOOT_PENDING, inst.REBOOT_STARTED)
_HARD_REBOOT = (inst.REBOOTING_HARD, inst.REBOOT_PENDING_HARD,
                inst.REBOOT_STARTED_HARD)

ACTIONS = {
    'stop': Action((inst.POWERING_OFF,), inst.POWERING_OFF, 'power_off',
                   inst.STOPPED, 'compute_stop_instance', 'power_off'),
    'start': Action((inst.POWERING_ON,), inst.POWERING_ON, 'power_on',
                    inst.ACTIVE, 'compute_start_instance', 'power_on'),
    'pause': Action((inst.PAUSING,), inst.PAUSING, 'pause', inst.PAUSED,
                    'compute_pause_instance', 'pause'),
    'unpause': Action((inst.UNPAUSING,), inst.UNPAUSING, 'unpause',
                      inst.ACTIVE, 'compute_unpause_instance', 'unpause'),
    'suspend': Action((inst.SUSPENDING,), inst.SUSPENDING, 'suspend',
                      inst.SUSPENDED, 'compute_suspend_instance',
                      'suspend'),
    'resume': Action((inst.RESUMING,), inst.RESUMING, 'resume',
                     inst.ACTIVE, 'compute_resume_instance', 'resume'),
    'reboot-SOFT': Action(_SOFT_REBOOT, inst.REBOOT_STARTED, 'reboot',
                          inst.ACTIVE, 'compute_reboot_instance', 'reboot'),
    'reboot-HARD': Action(_HARD_REBOOT, inst.REBOOT_STARTED_HARD, 'reboot',
                          inst.ACTIVE, 'compute_reboot_instance', 'reboot'),
}

_NOTIFIERS = {}


def notifier(host):
    """The notifier of compute ``host`` (publisher ``compute.<host>``)."""
    if host not in _NOTIFIERS:
        _NOTIFIERS[host] = notifications.InstanceNotifier(
            'compute.%s' % host)
    return _NOTIFIERS[host]


def run(agent, ctxt, host, instance_uuid, name, reboot_type=None):
    """Run power action ``name`` (``stop``... ``reboot``) on ``host``.

    :param reboot_type: ``SOFT`` or ``HARD`` for ``reboot``.
    """
    key = name if name != 'reboot' else 'reboot-%s' % (reboot_type or
                                                       'SOFT').upper()
    task = PowerTask(agent, ctxt, host, instance_uuid, ACTIONS[key],
                     reboot_type)
    with agent.instance_locks(instance_uuid):
        task.run()


def _interrupted(task_state):
    """(action name, reboot type) of a power task state, or None."""
    for key, action in ACTIONS.items():
        if task_state in action.task_states:
            name, _sep, reboot_type = key.partition('-')
            return name, reboot_type or None
    return None


def recover(agent, ctxt, host, instances):
    """Run again the power actions a restart interrupted on ``host``.

    :param instances: the host's instance primitives.
    """
    for instance in instances:
        found = _interrupted(instance.get('task_state'))
        if found is None or instance.get('deleted'):
            continue
        LOG.info('Resuming the interrupted %s of instance %s on %s',
                 found[0], instance['uuid'], host)
        try:
            run(agent, ctxt, host, instance['uuid'], found[0],
                reboot_type=found[1])
        except Exception:
            LOG.exception('Could not finish the %s of instance %s',
                          found[0], instance['uuid'])


class PowerTask(object):
    """One power action cast, run to its end (see the module doc)."""

    def __init__(self, agent, ctxt, host, uuid, action, reboot_type=None):
        self.agent = agent
        self.ctxt = ctxt
        self.host = host
        self.uuid = uuid
        self.action = action
        self.reboot_type = reboot_type
        self.conductor = agent.conductor
        self.notifier = notifier(host)

    def _update(self, values, expected, phase, result=None, tb=None):
        event = {'phase': phase, 'event': self.action.event,
                 'host': self.host}
        if phase == 'finish':
            event['result'] = result
            if tb:
                event['traceback'] = tb
        return self.conductor.instance_update(
            self.ctxt, self.uuid, values, expected_task_state=expected,
            action_event=event)

    def run(self):
        """Start, act, finish; a failure ends in a clean state."""
        action = self.action
        try:
            instance = self._update({'task_state': action.working},
                                    list(action.task_states), 'start')
        except Exception as exc:
            if utils.not_found(exc) or utils.unexpected_task_state(exc):
                LOG.info('Instance %s is no longer waiting for %s on %s '
                         '(%s); dropping the request', self.uuid,
                         action.driver_method, self.host, exc)
                return
            raise
        LOG.info('%s of instance %s on %s', action.driver_method,
                 self.uuid, self.host)
        self.notifier.emit(self.ctxt, 'instance.%s.start'
                           % action.notification, instance)
        try:
            self._act()
        except Exception as exc:
            return self._fail(exc, traceback.format_exc())
        try:
            instance = self._update(
                {'vm_state': action.vm_state, 'task_state': None,
                 'power_state': self._power_state()},
                action.working, 'finish', 'Success')
        except Exception as exc:
            if utils.not_found(exc) or utils.unexpected_task_state(exc):
                LOG.info('Instance %s changed during %s: %s', self.uuid,
                         action.driver_method, exc)
                return
            raise
        self.notifier.emit(self.ctxt, 'instance.%s.end'
                           % action.notification, instance)

    def _act(self):
        method = getattr(self.agent.driver, self.action.driver_method)
        if self.action.driver_method == 'reboot':
            method(self.host, self.uuid, (self.reboot_type or 'SOFT').upper())
        else:
            method(self.host, self.uuid)

    def _power_state(self):
        """The guest's power state as the driver reports it (NOSTATE when
        it cannot tell).
        """
        try:
            return self.agent.driver.get_info(self.host, self.uuid)
        except Exception as exc:
            LOG.warning('Could not read the power state of %s on %s: %s',
                        self.uuid, self.host, exc)
            return inst.NOSTATE

    def _fail(self, exc, tb):
        """Fault, event Error, no task state; ERROR after a failed reboot
        whose guest does not run.
        """
        action = self.action
        LOG.warning('%s of instance %s on %s failed: %s',
                    action.driver_method, self.uuid, self.host, exc)
        try:
            self.conductor.instance_fault_create(
                self.ctxt, self.uuid, 500, str(exc)[:255] or
                type(exc).__name__, details=tb, host=self.host)
        except Exception as fault_exc:
            LOG.warning('Could not record the fault of %s: %s', self.uuid,
                        fault_exc)
        power_state = self._power_state()
        values = {'task_state': None, 'power_state': power_state}
        if action.driver_method == 'reboot':
            values['vm_state'] = (inst.ACTIVE if power_state == inst.RUNNING
                                  else inst.ERROR)
        try:
            instance = self._update(values, action.working, 'finish',
                                    'Error', tb)
        except Exception as update_exc:
            if utils.not_found(update_exc) or utils.unexpected_task_state(
                    update_exc):
                LOG.info('Instance %s changed during %s', self.uuid,
                         action.driver_method)
                return
            raise
        self.notifier.emit(self.ctxt, 'instance.%s.error'
                           % action.notification, instance,
                           fault=notifications.exception_payload(exc))
