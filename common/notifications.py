# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Versioned notifications about servers, in Nova's envelope.

Every server action tells telemetry what happened: ``instance.<action>``
with ``.start`` and ``.end`` (or ``.error``) around work that takes time
(``instance.power_off.start``), a single event for instant ones
(``instance.lock``). They go through the process's oslo.messaging
notifier (:func:`common.rpc.get_notifier`), so ``[oslo_messaging_
notifications]`` chooses the driver and the topics; the envelope
(``event_type``, ``publisher_id``, ``priority``, ``payload``,
``timestamp``, ``message_id``) is oslo.messaging's, as Nova's is.

The payload is versioned in Nova's shape: ``nova_object.name``,
``nova_object.namespace``, ``nova_object.version`` and
``nova_object.data``, so that a consumer written for Nova's versioned
notifications finds what it looks for. The namespace is ``berth`` and the
version Berth's own (doc/operations.md, "Notifications", lists the
fields): the data carries Nova's field names for the fields Berth has.
"""

import contextlib
import logging
import threading
import traceback

from common import rpc

LOG = logging.getLogger(__name__)

NAMESPACE = 'berth'
ACTION_PAYLOAD = 'InstanceActionPayload'
ACTION_PAYLOAD_VERSION = '1.0'
# NOTE: Nova's names of the power states in notification payloads.
POWER_STATE_NAMES = {0: 'pending', 1: 'running', 3: 'paused',
                     4: 'shutdown', 6: 'crashed', 7: 'suspended'}
_FLAVOR_FIELDS = ('name', 'flavorid', 'vcpus', 'memory_mb', 'root_gb',
                  'ephemeral_gb', 'swap', 'extra_specs')


def _primitive(instance):
    if hasattr(instance, 'to_primitive'):
        return instance.to_primitive()
    return dict(instance or {})


def _flavor(flavor):
    if hasattr(flavor, 'to_primitive'):
        flavor = flavor.to_primitive()
    flavor = flavor or {}
    return {name: flavor.get(name) for name in _FLAVOR_FIELDS}


def exception_payload(exc):
    """Nova's ExceptionPayload fields for ``exc`` (a raised exception)."""
    frames = traceback.extract_tb(exc.__traceback__)
    last = frames[-1] if frames else None
    return {
        'exception': type(exc).__name__,
        'exception_message': str(exc),
        'module_name': type(exc).__module__,
        'function_name': last.name if last else None,
        'traceback': ''.join(traceback.format_exception(
            type(exc), exc, exc.__traceback__)),
    }


def instance_payload(instance, fault=None, ctxt=None):
    """The versioned payload describing ``instance`` (Instance or primitive).

    :param fault: an :func:`exception_payload` for ``.error`` events.
    :param ctxt: the request context, for who asked (the initiator).
    """
    data = _primitive(instance)
    system_metadata = data.get('system_metadata') or {}
    body = {
        'uuid': data.get('uuid'),
        'display_name': data.get('display_name'),
        'display_description': data.get('display_description'),
        'host': data.get('host'),
        'node': data.get('node'),
        'state': data.get('vm_state'),
        'power_state': POWER_STATE_NAMES.get(data.get('power_state') or 0,
                                             'pending'),
        'task_state': data.get('task_state'),
        'tenant_id': data.get('project_id'),
        'user_id': data.get('user_id'),
        'image_uuid': data.get('image_ref'),
        'flavor': _flavor(data.get('flavor')),
        'availability_zone': data.get('availability_zone'),
        'key_name': data.get('key_name'),
        'locked': bool(data.get('locked')),
        'locked_reason': system_metadata.get('locked_reason'),
        'metadata': data.get('metadata') or {},
        'tags': data.get('tags') or [],
        'created_at': data.get('created_at'),
        'launched_at': data.get('launched_at'),
        'terminated_at': data.get('terminated_at'),
        'fault': fault,
        'action_initiator_user': getattr(ctxt, 'user_id', None),
        'action_initiator_project': getattr(ctxt, 'project_id', None),
        'request_id': getattr(ctxt, 'request_id', None),
    }
    return {
        'nova_object.name': ACTION_PAYLOAD,
        'nova_object.namespace': NAMESPACE,
        'nova_object.version': ACTION_PAYLOAD_VERSION,
        'nova_object.data': body,
    }


class InstanceNotifier(object):
    """Sends server notifications as ``publisher_id`` (``service.host``).

    The notifier is made on first use, once RPC is initialized with a
    notification driver; before that (unit tests of a single module),
    and with no driver (the default), notifications are dropped before
    their payload is built. A
    notification that cannot be sent is logged, never raised: telemetry
    must not fail a user's action.
    """

    def __init__(self, publisher_id):
        self.publisher_id = publisher_id
        self._notifier = None
        self._lock = threading.Lock()

    def _get(self):
        with self._lock:
            if self._notifier is None and rpc.notifications_enabled():
                self._notifier = rpc.get_notifier(self.publisher_id)
            return self._notifier

    @property
    def enabled(self):
        """Whether notifications are sent (a caller may then skip reading
        what only a payload would show).
        """
        return self._get() is not None

    def emit(self, ctxt, event_type, instance, fault=None):
        """Send ``event_type`` about ``instance`` (ERROR for ``.error``)."""
        notifier = self._get()
        if notifier is None:
            return
        payload = instance_payload(instance, fault=fault, ctxt=ctxt)
        try:
            if event_type.endswith('.error'):
                notifier.error(ctxt, event_type, payload)
            else:
                notifier.info(ctxt, event_type, payload)
        except Exception:
            LOG.exception('Could not send notification %s', event_type)

    @contextlib.contextmanager
    def around(self, ctxt, action, current):
        """``instance.<action>.start``, then ``.end``, or ``.error`` and
        re-raise if the body raises.

        :param current: a callable returning the instance as it is now,
            so each event shows the state at its own moment.
        """
        if self._get() is None:
            # NOTE: ``current`` may read the database: not for nothing.
            yield
            return
        self.emit(ctxt, 'instance.%s.start' % action, current())
        try:
            yield
        except Exception as exc:
            self.emit(ctxt, 'instance.%s.error' % action, current(),
                      fault=exception_payload(exc))
            raise
        self.emit(ctxt, 'instance.%s.end' % action, current())
