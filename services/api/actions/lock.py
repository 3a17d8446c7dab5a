# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server actions: lock and unlock.

As Nova: a lock records who holds it, ``owner`` (the server's project)
or ``admin`` (anybody else), and from 2.73 an optional reason kept in the
server's system metadata. An owner locking a server it already holds
locked changes nothing; an admin's lock replaces the owner's. Unlocking a
lock somebody else's kind holds needs
``os_compute_api:os-lock-server:unlock:unlock_override`` (admin by
default), so an owner cannot lift an admin's lock. Both record the
instance action (``lock``/``unlock``) with its ``api_lock``/``api_unlock``
event, answer 202 and send ``instance.lock``/``instance.unlock`` from the
API process. Neither looks at the server's state or lock for the 409
other actions answer.
"""

from common.db import action_records
from common import notifications
from services.api.actions import checks
from services.api import cell_hosts
from services.api import policies
from services.api.schemas import server_actions as schemas
from services.api import util

LOCKED_REASON_VERSION = (2, 73)

_NOTIFIERS = {}


def _notifier(req):
    """The API process's notifier (one per host name)."""
    host = util.conf(req).host
    if host not in _NOTIFIERS:
        _NOTIFIERS[host] = notifications.InstanceNotifier('api.%s' % host)
    return _NOTIFIERS[host]


def _locked_by(ctxt, instance):
    return 'owner' if instance.project_id == ctxt.project_id else 'admin'


def _save(req, instance, cell, action, values):
    """Begin instance action ``action``, change the row, record the API
    event and notify ``instance.<action>``.
    """
    ctxt = util.context(req)
    updated = checks.begin(req, instance, cell, action, action, values,
                           expected_task_state=None)
    database = cell_hosts.database(cell)
    event = 'api_%s' % action
    action_records.action_event_start(ctxt, database, instance.uuid, event)
    action_records.action_event_finish(ctxt, database, instance.uuid,
                                       event)
    _notifier(req).emit(ctxt, 'instance.%s' % action, updated)
    return util.no_content(202)


def lock(req, value):
    """``lock`` (``{"locked_reason": ...}`` from 2.73): see module doc."""
    reason = None
    if util.at_least(req, LOCKED_REASON_VERSION):
        util.validate({'lock': value}, schemas.LOCK_V273)
        reason = (value or {}).get('locked_reason')
    instance, cell = checks.find(req, 'os_compute_api:os-lock-server:lock')
    ctxt = util.context(req)
    locked_by = _locked_by(ctxt, instance)
    if instance.locked and locked_by == 'owner':
        return util.no_content(202)
    system_metadata = dict(instance.system_metadata or {})
    system_metadata.pop('locked_reason', None)
    if reason:
        system_metadata['locked_reason'] = reason
    return _save(req, instance, cell, 'lock', {
        'locked': True, 'locked_by': locked_by,
        'system_metadata': system_metadata})


def unlock(req, value):
    """``unlock``: see module doc."""
    util.validate({'unlock': value}, schemas.UNLOCK)
    instance, cell = checks.find(req, 'os_compute_api:os-lock-server:unlock')
    expected = _locked_by(util.context(req), instance)
    if instance.locked_by and instance.locked_by != expected:
        policies.authorize(
            req, 'os_compute_api:os-lock-server:unlock:unlock_override',
            {'project_id': instance.project_id,
             'user_id': instance.user_id})
    system_metadata = dict(instance.system_metadata or {})
    system_metadata.pop('locked_reason', None)
    return _save(req, instance, cell, 'unlock', {
        'locked': False, 'locked_by': None,
        'system_metadata': system_metadata})


ACTIONS = {'lock': lock, 'unlock': unlock}
