# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server notifications: Nova's versioned payload shape, start/end/error.
"""

import oslo_messaging as messaging
import pytest

from common import context
from common import notifications
from common.objects import instance as instance_obj


class _Recorder(object):
    def __init__(self):
        self.sent = []

    def info(self, ctxt, event_type, payload):
        self.sent.append(('INFO', event_type, payload))

    def error(self, ctxt, event_type, payload):
        self.sent.append(('ERROR', event_type, payload))


@pytest.fixture
def notifier():
    sender = notifications.InstanceNotifier('compute.c1')
    sender._notifier = _Recorder()
    return sender


def _instance(**values):
    values.setdefault('uuid', 'u1')
    values.setdefault('vm_state', 'active')
    return instance_obj.Instance(
        display_name='vm', project_id='p', user_id='u', host='c1',
        power_state=instance_obj.RUNNING, **values)


def test_payload_has_novas_envelope_and_names():
    ctxt = context.RequestContext(user_id='alice', project_id='p')
    payload = notifications.instance_payload(
        _instance(locked=True, system_metadata={'locked_reason': 'why'}),
        ctxt=ctxt)
    assert payload['nova_object.name'] == 'InstanceActionPayload'
    assert payload['nova_object.namespace'] == 'berth'
    data = payload['nova_object.data']
    assert data['uuid'] == 'u1'
    assert data['state'] == 'active'
    assert data['power_state'] == 'running'
    assert data['tenant_id'] == 'p'
    assert data['locked'] is True
    assert data['locked_reason'] == 'why'
    assert data['action_initiator_user'] == 'alice'


def test_around_sends_start_and_end(notifier):
    states = iter(['active', 'stopped'])
    with notifier.around(None, 'power_off',
                         lambda: _instance(vm_state=next(states))):
        pass
    assert [(p, e, d['nova_object.data']['state'])
            for p, e, d in notifier._notifier.sent] == [
        ('INFO', 'instance.power_off.start', 'active'),
        ('INFO', 'instance.power_off.end', 'stopped')]


def test_around_sends_error_with_the_fault_and_reraises(notifier):
    with pytest.raises(RuntimeError):
        with notifier.around(None, 'reboot', _instance):
            raise RuntimeError('guest did not come back')
    priority, event, payload = notifier._notifier.sent[-1]
    assert (priority, event) == ('ERROR', 'instance.reboot.error')
    fault = payload['nova_object.data']['fault']
    assert fault['exception'] == 'RuntimeError'
    assert fault['exception_message'] == 'guest did not come back'


def test_a_failing_notifier_never_fails_the_action(notifier):
    def broken(*args):
        raise messaging.MessageDeliveryFailure('broker gone')
    notifier._notifier.info = broken
    notifier.emit(None, 'instance.lock', _instance())
