# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The filters of the server lists: who may use each, and how it matches.

As Nova: a caller the ``os_compute_api:servers:allow_all_filters`` rule
allows (an admin) filters on every field below at every microversion;
anybody else on ``name``, ``status``, ``image``, ``flavor`` and
``reservation_id``, ``locked`` from 2.73, then from 2.83
``availability_zone``, ``config_drive``, ``key_name``, ``created_at``,
``launched_at``, ``terminated_at``, ``power_state``, ``task_state``,
``vm_state``, ``progress`` and ``user_id``, and from 2.90 ``hostname``.
A filter the caller may not use is dropped, not refused (the list is as
if it had not been given). ``host`` (admins) and the time and tag filters
are the list handler's.

Matching follows Nova's database filters: ``user_id``, ``vm_state`` and
``task_state`` compare whole values; the others are regular expressions
searched in the value the server body shows (``power_state`` as its
number, times in ISO 8601 as shown); ``locked`` is a boolean (400 for
anything else); ``flavor`` is the flavor id, ``image`` the image id.
"""

import re

from oslo_utils import strutils

from services.api import errors
from services.api import hostnames
from services.api import policies
from services.api import util

# Filters anybody may use, and those a microversion opens to everybody.
PUBLIC = ('name', 'status', 'image', 'flavor', 'reservation_id')
LOCKED_VERSION = (2, 73)
MORE_FILTERS_VERSION = (2, 83)
HOSTNAME_VERSION = (2, 90)
OPENED = (
    (LOCKED_VERSION, ('locked',)),
    (MORE_FILTERS_VERSION, (
        'availability_zone', 'config_drive', 'key_name', 'created_at',
        'launched_at', 'terminated_at', 'power_state', 'task_state',
        'vm_state', 'progress', 'user_id')),
    (HOSTNAME_VERSION, ('hostname',)),
)
# Admins' own filters (the node a server is on).
ADMIN_ONLY = ('node',)

_EXACT = {'user_id': 'user_id', 'vm_state': 'vm_state',
          'task_state': 'task_state', 'reservation_id': 'reservation_id',
          'node': 'node', 'image': 'image_ref'}


def _shown_progress(instance):
    return '0' if instance.status in ('BUILD', 'ACTIVE') else ''


# filter -> what the server body shows, as text
_SHOWN = {
    'name': lambda i: i.display_name,
    'availability_zone': lambda i: i.availability_zone,
    'key_name': lambda i: i.key_name,
    'hostname': hostnames.of,
    # NOTE: no config drive is ever made: the bodies show ''.
    'config_drive': lambda i: '',
    'power_state': lambda i: str(i.power_state or 0),
    'progress': _shown_progress,
    'created_at': lambda i: util.iso(i.created_at),
    'launched_at': lambda i: util.iso_micro(i.launched_at),
    'terminated_at': lambda i: util.iso_micro(i.terminated_at),
}


def usable(req):
    """The filter names the caller may use at the request's version."""
    if policies.authorize(req, 'os_compute_api:servers:allow_all_filters',
                          fatal=False):
        names = PUBLIC + ADMIN_ONLY + tuple(
            n for _v, group in OPENED for n in group if n != 'locked')
        if util.at_least(req, LOCKED_VERSION):
            names += ('locked',)
        return frozenset(names)
    names = PUBLIC
    for version, group in OPENED:
        if util.at_least(req, version):
            names += group
    return frozenset(names)


def from_request(req):
    """{name: value} of the filters of the query the caller may use.

    :raises errors.BadRequest: ``locked`` that is no boolean.
    """
    allowed = usable(req)
    filters = {name: req.GET[name] for name in allowed if name in req.GET}
    if 'locked' in filters:
        try:
            filters['locked'] = strutils.bool_from_string(
                filters['locked'], strict=True)
        except ValueError as exc:
            raise errors.BadRequest('Invalid input received: %s' % exc)
    return filters


def _searched(pattern, text):
    if text is None:
        return False
    try:
        return re.search(pattern, text) is not None
    except re.error:
        # NOTE: not a regular expression: the text itself is looked for.
        return pattern in text


def matches(instance, filters):
    """True when ``instance`` passes every filter of :func:`from_request`
    (``status`` included).
    """
    for name, wanted in filters.items():
        if name in _SHOWN:
            if not _searched(wanted, _SHOWN[name](instance)):
                return False
        elif name in _EXACT or name == 'status':
            value = getattr(instance, _EXACT.get(name, name))
            if str(value or '').lower() != str(wanted).lower():
                return False
        elif name == 'locked':
            if bool(instance.locked) != wanted:
                return False
        elif name == 'flavor':
            if instance.flavor is None or (
                    instance.flavor.flavorid != wanted):
                return False
    return True
