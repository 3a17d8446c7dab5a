# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Which scheduler hint needs which filter, and the hints nothing reads.

A hint is read only by the filter (or weigher) made for it; when that
filter is not in ``[filter_scheduler] enabled_filters`` the hint is
ignored, as in Nova. Berth keeps that behaviour but says so: every hint
left unread becomes a note of the decision record (so it is in the fault
and in ``scheduler explain``) and an INFO log line.
"""

import logging

from common.objects import instance_group as group_obj

LOG = logging.getLogger(__name__)

#: hint -> the filters that act on it (any one of them enabled is enough).
HINT_FILTERS = {
    'same_host': ('SameHostFilter',),
    'different_host': ('DifferentHostFilter',),
    'query': ('JsonFilter',),
    'build_near_host_ip': ('SimpleCIDRAffinityFilter',),
}

#: server group policy -> what enforces it, for the ``group`` hint.
GROUP_POLICY_ENFORCERS = {
    group_obj.AFFINITY: ('ServerGroupAffinityFilter',),
    group_obj.ANTI_AFFINITY: ('ServerGroupAntiAffinityFilter',),
    group_obj.SOFT_AFFINITY: ('ServerGroupSoftAffinityWeigher',),
    group_obj.SOFT_ANTI_AFFINITY: ('ServerGroupSoftAntiAffinityWeigher',),
}


def _needed(spec, hint):
    """The names of which one must be enabled for ``hint`` to count."""
    if hint == 'group':
        group = spec.instance_group
        policy = group.policy if group is not None else None
        return GROUP_POLICY_ENFORCERS.get(policy, ())
    return HINT_FILTERS.get(hint, ())


def unread(spec, enabled):
    """The hints of ``spec`` that no enabled filter reads.

    :param enabled: the class names of the enabled filters and weighers.
    :returns: [{'hint': name, 'needs': [filter names, any one enough]}],
        in hint order.
    """
    found = []
    for hint in sorted(spec.scheduler_hints or {}):
        if not spec.scheduler_hints[hint]:
            continue
        needed = _needed(spec, hint)
        if not needed or any(name in enabled for name in needed):
            continue
        found.append({'hint': hint, 'needs': list(needed)})
    return found


def note(item):
    """The note of one :func:`unread` item, e.g. "hint same_host
    ignored: SameHostFilter is not enabled".
    """
    needed = item['needs']
    return 'hint %s ignored: %s %s not enabled' % (
        item['hint'], ' or '.join(needed),
        'is' if len(needed) == 1 else 'are')


def log_ignored(items):
    """Log each :func:`unread` item at INFO."""
    for item in items:
        LOG.info('Scheduler %s', note(item))


def ignored(spec, enabled):
    """Notes on the hints of ``spec`` that no enabled filter reads.

    :param enabled: the class names of the enabled filters and weighers.
    :returns: one note per such hint (see :func:`note`), in hint order,
        each also logged at INFO.
    """
    items = unread(spec, enabled)
    log_ignored(items)
    return [note(item) for item in items]
