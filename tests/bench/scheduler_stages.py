# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. See the License
# for the specific language governing permissions and limitations.
"""The measured scheduler's own stage timings, request by request.

The scheduler benchmark times ``select_destinations`` from the client.
To say where that time goes, the same scheduler process, in the same run,
records for every request it answers its explanation's ``timings_ms``,
whether its placement answer was shared, and its wall time in
``Scheduler.select_destinations``: ``berth-scheduler`` started through
this module (``python -m tests.bench.scheduler_stages STAGES_FILE
--config-file ...``) is the production service with one line of JSON
appended per request. The benchmark then matches the lines to its
measured requests by instance uuid, so that every figure of a stage
table comes from the requests of the latency table above it.

Writing the line costs a few microseconds per request, in the reply
path; the scheduler's workers share the file (one ``write`` per line on
an ``O_APPEND`` descriptor, so lines never interleave). :func:`summary`
and :func:`print_table` turn the records into the benchmark's stage
table.
"""

import collections
import functools
import json
import os
import statistics
import sys
import time

# The pipeline's stages in their order (see services/scheduler/scheduling.py);
# others an explanation has (decision_wait) follow them.
STAGES = ('request_filters', 'placement_query', 'host_states', 'filters',
          'weighers', 'claim', 'consume')


def _recording(select_destinations, path):
    """``Scheduler.select_destinations`` that appends a record to
    ``path`` for each call.
    """
    state = {}

    @functools.wraps(select_destinations)
    def wrapper(self, context, spec, instance_uuids, *args, **kwargs):
        started = time.perf_counter()
        explanation, failed = None, False
        try:
            result = select_destinations(self, context, spec, instance_uuids,
                                         *args, **kwargs)
            explanation = result[1]
            return result
        except Exception as exc:
            explanation = getattr(exc, 'explanation', None)
            failed = True
            raise
        finally:
            wall_ms = (time.perf_counter() - started) * 1000
            _append(state, path, {
                'instance_uuids': list(instance_uuids), 'failed': failed,
                'wall_ms': round(wall_ms, 3),
                'shared': bool((explanation or {}).get(
                    'placement_answer_shared')),
                'timings_ms': (explanation or {}).get('timings_ms', {})})
    return wrapper


def _append(state, path, record):
    # NOTE: opened in each worker after the fork, once.
    if state.get('pid') != os.getpid():
        state['fd'] = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                              0o644)
        state['pid'] = os.getpid()
    os.write(state['fd'], (json.dumps(record) + '\n').encode())


def read(path, instance_uuids):
    """The records of the requests whose first instance is one of
    ``instance_uuids`` (latest wins), by that uuid.
    """
    wanted = set(instance_uuids)
    found = {}
    try:
        with open(path) as f:
            for line in f:
                record = json.loads(line)
                uuids = record['instance_uuids']
                if uuids and uuids[0] in wanted:
                    found[uuids[0]] = record
    except FileNotFoundError:
        pass
    return found


def summary(records, client_ms):
    """Stage means of the measured requests, by placement answer.

    :param records: first instance uuid -> the scheduler's record of the
        request (:func:`read`).
    :param client_ms: first instance uuid -> the request's client time.
    :returns: {'shared': ..., 'own': ...}, each with the request count,
        the means of the client time, of the scheduler's wall time and
        of each stage, and the rest (RPC and transport) per request.
    """
    groups = {'shared': [], 'own': []}
    for first_uuid, record in records.items():
        groups['shared' if record['shared'] else 'own'].append(
            (record, client_ms[first_uuid]))
    result = {}
    for name, pairs in groups.items():
        if not pairs:
            result[name] = {'requests': 0}
            continue
        stages = collections.Counter()
        for record, _ms in pairs:
            stages.update(record['timings_ms'])
        count = len(pairs)
        result[name] = {
            'requests': count,
            'failures': sum(r['failed'] for r, _ms in pairs),
            'rpc_ms_mean': round(statistics.mean(ms for _r, ms in pairs), 3),
            'wall_ms_mean': round(statistics.mean(
                r['wall_ms'] for r, _ms in pairs), 3),
            # NOTE: per request, so never negative: the client's time
            # contains the scheduler's.
            'transport_ms_mean': round(statistics.mean(
                ms - r['wall_ms'] for r, ms in pairs), 3),
            'stages_ms_mean': {k: round(v / count, 3)
                               for k, v in stages.items()}}
    return result


def stage_rows(group, names=STAGES):
    """(name, ms, share of the mean client time) rows of one group of
    requests (a :func:`summary` entry); [] for an empty group.

    :param names: the stages to show, in order; 0 for those the group's
        requests did not go through.
    """
    if not group or not group['requests']:
        return []
    rpc = group['rpc_ms_mean']
    measured = group['stages_ms_mean']
    rows = [(name, measured.get(name, 0.0)) for name in names]
    staged = sum(ms for _n, ms in rows)
    rows.append(('other in scheduler', group['wall_ms_mean'] - staged))
    # NOTE: the rest of each request's client time: transport,
    # (de)serialisation, dispatch; measured on the same requests.
    rows.append(('RPC + transport', group['transport_ms_mean']))
    rows.append(('total (client mean)', rpc))
    return [(name, ms, ms / rpc if rpc else 0.0) for name, ms in rows]


def print_table(w, size, columns):
    """Write one size's stage table with ``w``.

    :param columns: [(label, a :func:`summary` entry)].
    """
    # NOTE: the same rows in every column, whatever stages its requests
    # went through (decision_wait only when claiming, say).
    seen = {name for _l, group in columns
            for name in group.get('stages_ms_mean', ())}
    names = STAGES + tuple(sorted(seen - set(STAGES)))
    table = [(label, stage_rows(group, names)) for label, group in columns]
    w('\n%-20s' % ('%s hosts' % size) +
      ''.join('%21s' % label for label, _rows in table) + '\n')
    for index, (name, _ms, _share) in enumerate(table[0][1]):
        w('%-20s' % name + ''.join(
            '%12.2f ms %5.1f%%' % (rows[index][1], 100 * rows[index][2])
            for _label, rows in table) + '\n')
    w('%-20s' % 'requests' + ''.join(
        '%21d' % group['requests'] for _l, group in columns) + '\n')


def main(argv=None):
    """Run ``berth-scheduler`` with ``argv[1:]``, recording into
    ``argv[0]``.
    """
    argv = sys.argv[1:] if argv is None else argv
    from services.scheduler import cmd
    from services.scheduler import scheduling

    scheduling.Scheduler.select_destinations = _recording(
        scheduling.Scheduler.select_destinations, argv[0])
    sys.argv = ['berth-scheduler'] + argv[1:]
    return cmd.main()


if __name__ == '__main__':
    sys.exit(main())
