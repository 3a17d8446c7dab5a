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
an ``O_APPEND`` descriptor, so lines never interleave).
"""

import functools
import json
import os
import sys
import time


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
