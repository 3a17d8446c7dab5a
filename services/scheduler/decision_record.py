# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The "why here" record of a successful placement, bounded in size.

A NoValidHost fault carries the scheduler's whole
:class:`~services.scheduler.explanation.Explanation`; a placement that
succeeded keeps a condensed copy of the same record with the server
(doc/operations.md, "Why a server is where it is"): per filter the hosts
in and out, per filter the number of hosts it removed with its most
common reasons and a few of the hosts, the best weighed hosts with each
weigher's share, the hints no enabled filter read, and, when the host was
drawn at random among several (equal weights, or
``host_subset_size``), which ones. Whatever the size of the cloud, the
record stays under :data:`MAX_BYTES` of JSON, so that it fits in an
action event's ``details`` and in an RPC reply.

The scheduler attaches one record per instance to the instance's chosen
Selection (``decision``); the conductor stores it (see
:mod:`common.db.decision_records`).
"""

import collections
import json

#: How many removed hosts, reasons and notes a record names at most.
HOSTS_SHOWN = 5
REASONS_SHOWN = 3
NOTES_SHOWN = 20
NOTE_CHARS = 400
#: The most JSON a record may take; past it the examples are dropped.
MAX_BYTES = 16384


def _rejected(rejections):
    """Per filter: how many hosts it removed, its commonest reasons and a
    few of the hosts.
    """
    # NOTE: every rejected host of the request passes here once per
    # request; an entry is made only for a filter not seen yet.
    by_filter = {}
    for key, item in rejections.items():
        entry = by_filter.get(item['filter'])
        if entry is None:
            entry = by_filter[item['filter']] = [
                0, collections.Counter(), []]
        entry[0] += 1
        entry[1][item['reason']] += 1
        if len(entry[2]) < HOSTS_SHOWN:
            entry[2].append(key)
    return {name: {'count': count,
                   'reasons': [[reason, n] for reason, n in
                               reasons.most_common(REASONS_SHOWN)],
                   'hosts': hosts}
            for name, (count, reasons, hosts) in by_filter.items()}


def pick_note(pick):
    """The sentence saying how a host was drawn, e.g. "h2 (h2) was picked
    at random among 3 hosts of equal weight 1.0: h1, h2, h3".
    """
    names = ', '.join(host for host, _node in pick['pool'])
    more = pick['drawn_among'] - len(pick['pool'])
    if more > 0:
        names += ' and %d more' % more
    how = ('hosts of equal weight %s' % pick['weight']
           if pick['equal_weight'] else
           'best hosts ([filter_scheduler] host_subset_size)')
    text = '%s (%s) was picked at random among %d %s: %s' % (
        pick['host'], pick['node'], pick['drawn_among'], how, names)
    if pick.get('claimed'):
        text += '; placement refused it and %s (%s) was claimed' % tuple(
            pick['claimed'])
    return text


def _shared(explanation):
    """The parts of the record every instance of the request shares."""
    return {
        'request_kind': explanation.get('request_kind', 'boot'),
        'summary': explanation.get('summary'),
        'placement_query': explanation.get('placement_query'),
        'candidates': explanation.get('candidates', 0),
        'hosts': explanation.get('hosts', 0),
        'filters': [{'filter': f['filter'], 'hosts_in': f['hosts_in'],
                     'hosts_out': f['hosts_out']}
                    for f in explanation.get('filters') or []],
        'rejected': _rejected(explanation.get('rejections') or {}),
        'weighed': (explanation.get('weighed') or [])[:HOSTS_SHOWN],
        'ignored_hints': explanation.get('ignored_hints') or [],
        'timings_ms': explanation.get('timings_ms') or {},
    }


def condense(explanation, index=0, shared=None):
    """The bounded record of instance ``index`` of a decision.

    :param explanation: ``Explanation.to_dict()`` of the request.
    :param shared: ``_shared(explanation)``, when the caller has it.
    :returns: a dict of JSON primitives, at most :data:`MAX_BYTES` long.
    """
    selected = explanation.get('selected') or []
    picks = [p for p in explanation.get('picks') or []
             if p['instance'] == index]
    notes = [n[:NOTE_CHARS] for n in explanation.get('notes') or []]
    if picks:
        notes.append(pick_note(picks[0]))
    if index:
        notes.append('filters and weights shown are those of instance '
                     '0 of this request of %d' % len(selected))
    # NOTE: a shallow copy: the instances of a request share the parts of
    # ``shared``, which :func:`bounded` replaces rather than changes, and
    # the Selection's to_primitive copies the whole record anyway.
    record = dict(shared if shared is not None else _shared(explanation))
    record.update({
        'selected': selected[index] if index < len(selected) else None,
        'random_pick': dict(picks[0]) if picks else None,
        'notes': notes[-NOTES_SHOWN:],
    })
    return bounded(record)


def _size(record):
    return len(json.dumps(record, separators=(',', ':')))


def bounded(record):
    """``record`` cut down to :data:`MAX_BYTES` of JSON: first the
    example hosts, then the reasons, then the notes go.
    """
    if _size(record) <= MAX_BYTES:
        return record
    # NOTE: the parts cut are replaced by copies, never changed in place:
    # the records of one request share them (see condense).
    record['rejected'] = {name: dict(entry, hosts=[]) for name, entry in
                          record.get('rejected', {}).items()}
    if record.get('random_pick'):
        record['random_pick'] = dict(
            record['random_pick'], pool=record['random_pick']['pool'][:1])
    if _size(record) > MAX_BYTES:
        record['rejected'] = {
            name: dict(entry, reasons=entry['reasons'][:1])
            for name, entry in record['rejected'].items()}
    while _size(record) > MAX_BYTES and record.get('notes'):
        record['notes'].pop(0)
    if _size(record) > MAX_BYTES:
        record['rejected'] = {}
        record['truncated'] = True
    return record


def attach(selections, explanation):
    """Put each instance's record on its chosen Selection (``decision``).

    :param selections: per instance, its Selection list (chosen first).
    """
    shared = _shared(explanation)
    for index, per_instance in enumerate(selections):
        if per_instance:
            per_instance[0].decision = condense(explanation, index, shared)
    return selections
