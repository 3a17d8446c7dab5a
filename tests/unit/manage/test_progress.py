# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""berth-manage's progress line: on a terminal only, done/total and rate."""

import io
import types

from services.manage import output


class _Clock(object):
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _run(stream, items=2500, per_second=1000, **kwargs):
    clock = _Clock()
    progress = output.Progress('discover_hosts', stream=stream,
                               clock=clock, **kwargs)
    with progress:
        progress.expect(items)
        for _ in range(items):
            clock.now += 1.0 / per_second
            progress.step()
    return stream.getvalue()


def test_a_long_run_redraws_one_line_each_second_on_a_terminal():
    text = _run(_Terminal())
    assert text.startswith('\rdiscover_hosts: 100')
    assert text.count('\r') == 3
    assert text.endswith('\rdiscover_hosts: 2500/2500 done (1000/s)\n')
    assert 'discover_hosts: 1000/2500 done (1000/s)' in text


def test_a_short_run_prints_nothing():
    assert _run(_Terminal(), items=10) == ''


def test_nothing_when_not_a_terminal():
    assert _run(io.StringIO()) == ''


def test_quiet_silences_it_on_a_terminal(monkeypatch):
    monkeypatch.setattr(output.sys, 'stderr', _Terminal())
    progress = output.progress(types.SimpleNamespace(quiet=True), 'audit')
    assert not progress.enabled
    progress = output.progress(types.SimpleNamespace(quiet=False), 'audit')
    assert progress.enabled


def test_without_a_total_it_counts_and_rates():
    progress = output.Progress('map_instances', enabled=False,
                               clock=lambda: 10.0)
    progress.step(20)
    assert progress.line(now=12.0) == 'map_instances: 20 done (10/s)'


def test_discover_hosts_reports_each_host():
    from common.db import discovery
    seen = []

    class Recorder(object):
        def expect(self, amount):
            seen.append(('expect', amount))

        def step(self, amount=1):
            seen.append('step')

    class Access(object):
        api = None

        def refresh(self):
            pass

        def cells(self, ctxt):
            return [types.SimpleNamespace(is_cell0=False, name='c1',
                                          uuid='u1')]

        def database(self, cell):
            return 'db'

    import unittest.mock as mock
    nodes = [{'host': 'h%d' % i, 'uuid': 'n%d' % i, 'id': i}
             for i in range(3)]
    with mock.patch.object(discovery.compute_records, 'list_unmapped_nodes',
                           return_value=nodes), \
            mock.patch.object(discovery.compute_records, 'mark_mapped'), \
            mock.patch.object(discovery, '_map_host', return_value=True):
        found = discovery.discover_hosts(None, Access(), progress=Recorder())
    assert found == ['h0', 'h1', 'h2']
    assert seen == [('expect', 3), 'step', 'step', 'step']
