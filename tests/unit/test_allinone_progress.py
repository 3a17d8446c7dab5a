# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The all-in-one's progress line, its stop order, the demo's tie note."""

import io
import os
import signal
import threading
import time

import pytest

from services.allinone import cmd
from services.allinone import demo


def _explanation(weights, tied, selected):
    return {'summary': '8 hosts', 'tied_best': tied,
            'selected': [[selected, selected]],
            'weighed': [{'host': host, 'node': host, 'weight': weight,
                         'weighers': {}} for host, weight in weights]}


def test_a_random_pick_among_equals_says_so():
    lines = demo.explain_decision(_explanation(
        [('c1', 1.0), ('c2', 1.0), ('c3', 1.0)], 4, 'c3'))
    assert lines[-1] == ('=> 8 hosts; chose c3, at random among 4 hosts '
                         'of equal weight')


def test_a_clear_winner_is_just_chosen():
    lines = demo.explain_decision(_explanation(
        [('c1', 2.0), ('c2', 1.0)], 1, 'c1'))
    assert lines[-1] == '=> 8 hosts; chose c1'


def test_progress_is_one_growing_line():
    out = io.StringIO()
    progress = cmd.Progress(out)
    progress.begin('Starting Berth in /s:')
    progress.step('loading')
    progress.step('databases')
    progress.end(' ... ready.')
    assert out.getvalue() == 'Starting Berth in /s: loading, databases ' \
                             '... ready.\n'


class _Service(object):
    def __init__(self, name, log):
        self.binary = name
        self.log = log

    def stop(self):
        self.log.append('stop ' + self.binary)

    def wait(self):
        self.log.append('wait ' + self.binary)


def test_launcher_stops_in_reverse_order_each_drained():
    from common import service
    log = []
    launcher = service.ServiceLauncher()
    launcher.services = [_Service(n, log) for n in ('conductor', 'compute')]
    launcher.stop(report=lambda svc: log.append('report ' + svc.binary))
    assert log == ['report compute', 'stop compute', 'wait compute',
                   'report conductor', 'stop conductor', 'wait conductor']


def test_the_default_state_dir_is_the_state_modules():
    from services.allinone import state
    assert cmd.DEFAULT_STATE_DIR == state.DEFAULT_STATE_DIR


class _SlowStart(_Service):
    def start(self):
        self.log.append('start')
        # NOTE: as a compute waiting for its conductor.
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
        time.sleep(30)


def test_sigterm_while_starting_stops_at_once_and_cleans_up():
    from common import service
    log = []
    launcher = service.ServiceLauncher()
    started = time.monotonic()
    try:
        with pytest.raises(service.StartInterrupted) as err:
            launcher.launch_service(_SlowStart('compute', log))
    finally:
        launcher._restore()
    assert time.monotonic() - started < 10
    assert err.value.code == 0 and err.value.signum == signal.SIGTERM
    assert log == ['start', 'stop compute', 'wait compute']
