# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The service runner over ``fake://``: start, stop, tasks, heartbeats."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

from oslo_config import cfg
import oslo_messaging as messaging
from oslo_utils import timeutils
import pytest

from common import baserpc
from common import context
from common import exception
from common import manager
from common import rpc
from common import service
from common import servicegroup
from tests.unit import waiting

TOPIC = 'unit-service'


class TaskManager(manager.Manager):
    """Counts periodic runs and hooks; ``slow`` holds a message."""

    target = messaging.Target(version='1.0')

    def __init__(self, host='h1'):
        super().__init__(host=host, service_name='unit')
        self.ticks = 0
        self.calls = []

    @manager.periodic_task(spacing=0.1, run_immediately=True)
    def _tick(self, ctxt):
        self.ticks += 1

    def init_host(self):
        self.calls.append('init_host')

    def post_start_hook(self):
        self.calls.append('post_start_hook')

    def cleanup_host(self):
        self.calls.append('cleanup_host')

    def reset(self):
        self.calls.append('reset')

    def slow(self, ctxt, seconds):
        time.sleep(seconds)
        return 'done'


@pytest.fixture
def overrides():
    """``overrides(name=value)`` on CONF; cleared afterwards."""
    rpc.register_opts(rpc.CONF)
    done = []

    def _set(group=None, **values):
        for name, value in values.items():
            rpc.CONF.set_override(name, value, group=group)
            done.append((name, group))
    _set(transport_url='fake:///', rpc_response_timeout=5,
         periodic_fuzzy_delay=0, report_interval=1, service_down_time=60)
    yield _set
    for name, group in done:
        rpc.CONF.clear_override(name, group=group)


@pytest.fixture
def make_service(overrides):
    """Factory of started services on fake://; all stopped afterwards."""
    rpc.init(rpc.CONF)
    made = []

    def _make(host='h1', start=True):
        group = servicegroup.API(servicegroup.MemoryDriver())
        svc = service.Service('berth-unit', TOPIC, TaskManager(host), host,
                              servicegroup_api=group)
        made.append(svc)
        if start:
            svc.start()
        return svc
    yield _make
    for svc in made:
        svc.stop()
        svc.wait()
    rpc.cleanup()


def _wait_for(predicate, timeout=5):
    return waiting.wait_for(predicate, timeout, interval=0.05)


def test_start_serves_ping_and_stop_cleans_up(make_service):
    svc = make_service()
    assert svc.manager.calls == ['init_host', 'post_start_hook']
    reply = baserpc.BaseAPI(TOPIC).ping(context.get_admin_context(), 'hi')
    assert reply == {'service': 'unit', 'arg': 'hi'}
    svc.stop()
    svc.wait()
    assert svc.manager.calls[-1] == 'cleanup_host'


def test_stop_finishes_the_message_in_flight(make_service):
    svc = make_service()
    client = rpc.get_client(messaging.Target(topic=TOPIC))
    result = {}
    caller = threading.Thread(target=lambda: result.setdefault(
        'r', client.call(context.get_admin_context(), 'slow', seconds=1)))
    caller.start()
    time.sleep(0.3)
    svc.stop()
    svc.wait()
    caller.join(10)
    assert result == {'r': 'done'}


def test_periodic_tasks_run(make_service):
    svc = make_service()
    assert _wait_for(lambda: svc.manager.ticks >= 3)


def test_periodic_tasks_can_be_disabled(make_service, overrides):
    overrides(periodic_enable=False)
    svc = make_service()
    time.sleep(0.5)
    assert svc.manager.ticks == 0


def test_heartbeat_updates_the_record(make_service):
    svc = make_service()
    group = svc.servicegroup_api
    first = group.get('h1', 'berth-unit')
    assert first.report_count >= 1 and first.topic == TOPIC
    assert group.service_is_up(first)
    assert _wait_for(lambda: group.get('h1', 'berth-unit').report_count >= 2)
    later = group.get('h1', 'berth-unit')
    assert later.updated_at >= first.updated_at


def test_up_down_forced_down_and_disabled(overrides):
    overrides(service_down_time=60)
    group = servicegroup.API(servicegroup.MemoryDriver())
    group.join('h1', 'berth-compute', 'compute')
    record = group.report('h1', 'berth-compute')
    assert group.service_is_up(record)
    timeutils.set_time_override(record.updated_at)
    try:
        timeutils.advance_time_seconds(61)
        assert not group.service_is_up(group.get('h1', 'berth-compute'))
    finally:
        timeutils.clear_time_override()
    disabled = group.update('h1', 'berth-compute', disabled=True,
                            disabled_reason='maintenance')
    assert disabled.disabled and group.service_is_up(disabled)
    forced = group.update('h1', 'berth-compute', forced_down=True)
    assert not group.service_is_up(forced)
    with pytest.raises(exception.ServiceNotFound):
        group.report('h2', 'berth-compute')
    assert servicegroup.ServiceRecord.from_primitive(
        forced.to_primitive()) == forced


def test_down_time_not_above_report_interval_is_raised(overrides):
    overrides(report_interval=30, service_down_time=20)
    assert servicegroup.service_down_time() == 75


def test_db_servicegroup_without_a_database_is_a_clear_error(overrides):
    overrides(servicegroup_driver='db')
    with pytest.raises(exception.DBNotConfigured) as err:
        servicegroup.API()
    assert 'No connection is configured for the cell ([database])' in str(
        err.value)


def test_sighup_reloads_and_sigterm_stops(make_service, tmp_path):
    conf = cfg.ConfigOpts()
    conf.register_opt(cfg.StrOpt('level', default='a', mutable=True))
    conf_file = tmp_path / 'berth.conf'
    conf_file.write_text('[DEFAULT]\nlevel = b\n')
    conf([], default_config_files=[str(conf_file)])
    svc = make_service(start=False)
    previous = signal.getsignal(signal.SIGTERM)
    launcher = service.ServiceLauncher(conf)
    launcher.launch_service(svc)

    def _signals():
        conf_file.write_text('[DEFAULT]\nlevel = c\n')
        os.kill(os.getpid(), signal.SIGHUP)
        _wait_for(lambda: 'reset' in svc.manager.calls)
        os.kill(os.getpid(), signal.SIGTERM)
    sender = threading.Thread(target=_signals)
    sender.start()
    assert launcher.wait(poll=0.1) == 0
    sender.join()
    assert conf.level == 'c'
    assert svc.manager.calls[-2:] == ['reset', 'cleanup_host']
    assert signal.getsignal(signal.SIGTERM) is previous


_WORKERS_SCRIPT = textwrap.dedent('''
    import os, sys
    from common import manager, rpc, service, servicegroup
    out = sys.argv[1]

    class M(manager.Manager):
        def init_host(self):
            open(os.path.join(out, 'start-%d' % os.getpid()), 'w').close()

        def cleanup_host(self):
            open(os.path.join(out, 'stop-%d' % os.getpid()), 'w').close()

    rpc.register_opts(rpc.CONF)
    rpc.CONF.set_override('transport_url', 'fake:///')
    rpc.CONF.set_override('periodic_enable', False)
    svc = service.Service(
        'berth-unit', 'unit-workers', M(service_name='unit'), 'h1',
        servicegroup_api=servicegroup.API(servicegroup.MemoryDriver()))
    sys.exit(service.serve(svc, workers=2))
''')


def test_process_launcher_respawns_and_drains_workers(tmp_path):
    proc = subprocess.Popen([sys.executable, '-c', _WORKERS_SCRIPT,
                             str(tmp_path)])

    def _pids(kind):
        return {int(p.name.split('-')[1]) for p in tmp_path.glob(kind + '-*')}
    try:
        assert _wait_for(lambda: len(_pids('start')) == 2, 30)
        victim = sorted(_pids('start'))[0]
        os.kill(victim, signal.SIGKILL)
        assert _wait_for(lambda: len(_pids('start')) == 3, 30)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # NOTE: every worker alive at SIGTERM drained and ran cleanup_host.
    assert _pids('stop') == _pids('start') - {victim}
