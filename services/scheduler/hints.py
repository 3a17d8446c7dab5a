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


def ignored(spec, enabled):
    """Notes on the hints of ``spec`` that no enabled filter reads.

    :param enabled: the class names of the enabled filters and weighers.
    :returns: one note per such hint, in hint order, each also logged at
        INFO, e.g. "hint same_host ignored: SameHostFilter is not
        enabled".
    """
    notes = []
    for hint in sorted(spec.scheduler_hints or {}):
        if not spec.scheduler_hints[hint]:
            continue
        needed = _needed(spec, hint)
        if not needed or any(name in enabled for name in needed):
            continue
        note = 'hint %s ignored: %s %s not enabled' % (
            hint, ' or '.join(needed), 'is' if len(needed) == 1 else 'are')
        LOG.info('Scheduler %s', note)
        notes.append(note)
    return notes
