# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Stopping the all-in-one on RabbitMQ: quick, in order, no errors.

The services stop consumers before providers (API, computes, scheduler,
conductor, placement), each drained before the next: a compute's last
heartbeat goes through a conductor that still answers, so SIGTERM ends
the process in seconds and the log has no ERROR and no traceback.
"""

import os
import signal
import subprocess
import sys
import time

from tests.functional import test_all_in_one as aio

STOP_SECONDS = 15


def test_sigterm_on_rabbit_stops_in_seconds_without_errors(vhost, tmp_path):
    state_dir = tmp_path / 'state'
    conf_file = tmp_path / 'berth.conf'
    conf_file.write_text('[DEFAULT]\ntransport_url = %s\n' % vhost.url)
    out_file = tmp_path / 'out'
    with open(out_file, 'w') as out:
        proc = subprocess.Popen(
            aio._command(state_dir, '--hosts', '3', '--config-file',
                         str(conf_file)),
            stdout=out, stderr=subprocess.STDOUT, env=aio._environ(),
            start_new_session=True)
    try:
        text = aio._wait_ready(proc, out_file)
        assert 'transport      rabbit://' in text
        # NOTE: a few heartbeats through the conductor first.
        time.sleep(3)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(60)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    log = (state_dir / 'berth.log').read_text()
    assert status == 0, out_file.read_text()
    assert took < STOP_SECONDS, 'stopped in %.1fs:\n%s' % (
        took, aio._log_tail(state_dir))
    bad = [line for line in log.splitlines()
           if ' ERROR ' in line or 'Traceback' in line]
    assert not bad, '\n'.join(bad[:40])
    assert 'Stopped berth-conductor' in log
    # NOTE: the computes drained before the conductor stopped.
    assert (log.index('Stopped berth-compute')
            < log.index('Stopping berth-conductor'))


def test_a_compute_waiting_for_its_conductor_stops_on_sigterm(vhost,
                                                              tmp_path):
    """SIGTERM during start (no conductor answers): exit 0 at once."""
    conf_file = tmp_path / 'berth.conf'
    conf_file.write_text('[DEFAULT]\ntransport_url = %s\n' % vhost.url)
    log = tmp_path / 'compute.log'
    with open(log, 'w') as out:
        proc = subprocess.Popen(
            [sys.executable, '-m', 'services.compute.cmd', '--config-file',
             str(conf_file)], stdout=out, stderr=subprocess.STDOUT,
            env=aio._environ(), start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while 'Starting berth-compute' not in log.read_text():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        time.sleep(1)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(30)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    text = log.read_text()
    assert status == 0, text
    assert took < STOP_SECONDS, text
    assert 'Traceback' not in text, text
    assert 'while starting' in text, text
