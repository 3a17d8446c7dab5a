# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The opt-in eventlet mode (BERTH_EVENTLET=1) works end to end.

One smoke test, as doc/architecture.md promises: ``berth-scheduler`` started
exactly as its systemd unit starts it, but with ``BERTH_EVENTLET=1`` in its
environment, on the real RabbitMQ (a virtual host of its own) and SQLite
databases synced by ``berth-manage``. It must come up monkey-patched with
oslo.messaging's eventlet executor, heartbeat into its service record,
answer a real RPC round trip (``ping`` of common/baserpc) and stop cleanly
on SIGTERM. A second one runs the all-in-one demo in the same mode: both
HTTP servers, every RPC service and the demo's boots on green threads.
"""

import os
import subprocess
import sys
import time
import uuid

import sqlalchemy as sa

from common import baserpc
from common import context
from common import eventlet_mode
from tests.functional import placement_server
from tests.functional import scheduler_env

READY_TIMEOUT = 60
# NOTE: what oslo.messaging logs (DEBUG) when it finds ``thread`` patched
# and picks its eventlet executor; proof the process runs green.
EVENTLET_EXECUTOR_LINE = 'using an eventlet executor'


def _write_conf(workdir, vhost, host):
    """The scheduler's config file: the vhost and SQLite databases."""
    urls = {name: 'sqlite:///%s' % os.path.join(workdir, name + '.sqlite')
            for name in ('api', 'cell1')}
    path = os.path.join(workdir, 'berth.conf')
    with open(path, 'w') as f:
        f.write('\n'.join([
            '[DEFAULT]',
            'host = %s' % host,
            'transport_url = %s' % vhost.url,
            'debug = True',
            # NOTE: oslo.log quiets oslo.messaging to INFO by default; its
            # DEBUG line names the executor it picked.
            'default_log_levels = oslo_messaging=DEBUG,amqp=WARN',
            'log_file = %s' % os.path.join(workdir, 'scheduler.log'),
            'servicegroup_driver = db',
            'report_interval = 1',
            '[scheduler]',
            'workers = 1',
            '[database]',
            'connection = %s' % urls['cell1'],
            '[api_database]',
            'connection = %s' % urls['api'],
        ]) + '\n')
    return path, urls


def _manage(conf_file, *args):
    result = subprocess.run(
        [sys.executable, '-m', 'services.manage.main', '--config-file',
         conf_file] + list(args), capture_output=True, text=True,
        timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]


def _report_count(cell_url, host):
    """The scheduler's heartbeat count in its service record (or 0)."""
    engine = sa.create_engine(cell_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            return connection.execute(sa.text(
                "SELECT report_count FROM services WHERE host = :host AND "
                "binary = 'berth-scheduler' AND deleted = 0"),
                {'host': host}).scalar() or 0
    finally:
        engine.dispose()


def test_scheduler_serves_rpc_in_eventlet_mode(vhost_rpc, tmp_path,
                                               monkeypatch):
    vhost = vhost_rpc
    host = 'eventlet-%s' % uuid.uuid4().hex[:8]
    conf_file, urls = _write_conf(str(tmp_path), vhost, host)
    _manage(conf_file, 'api_db', 'sync')
    _manage(conf_file, 'db', 'sync')
    # NOTE: inherited by the child only; this process stays native (it
    # imported common.eventlet_mode without the variable).
    assert not eventlet_mode.is_active()
    monkeypatch.setenv(eventlet_mode.ENV_VAR, '1')
    scheduler = scheduler_env.SchedulerProcess(
        conf_file, str(tmp_path / 'scheduler.log'))
    scheduler.start()
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while vhost.consumers('scheduler') < 1:
            assert scheduler.alive(), scheduler.log_tail()
            assert time.monotonic() < deadline, scheduler.log_tail()
            time.sleep(0.3)
        ctxt = context.RequestContext(user_id='smoke', project_id='smoke')
        reply = baserpc.BaseAPI('scheduler').ping(
            ctxt, {'hello': 'green'}, server=host)
        assert reply == {'service': 'scheduler', 'arg': {'hello': 'green'}}

        # NOTE: the heartbeat loop is a (green) thread too: two reports
        # prove it keeps running beside the RPC server.
        while _report_count(urls['cell1'], host) < 2:
            assert time.monotonic() < deadline, scheduler.log_tail()
            time.sleep(0.3)
        with open(scheduler.log_file) as f:
            log = f.read()
        assert EVENTLET_EXECUTOR_LINE in log, scheduler.log_tail()
    finally:
        code = scheduler.stop()
    assert code == 0, scheduler.log_tail()


def test_all_in_one_demo_in_eventlet_mode(tmp_path):
    """berth-all-in-one --demo, monkey-patched: same report, status 0."""
    binary = placement_server.bin_path('berth-all-in-one')
    assert binary, 'berth-all-in-one is not installed (pip install -e .)'
    result = subprocess.run(
        [binary, '--demo', '--hosts', '2', '--state-dir',
         str(tmp_path / 'state'),
         '--api-port', str(placement_server.free_port()),
         '--placement-port', str(placement_server.free_port())],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, **{eventlet_mode.ENV_VAR: '1'}))
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'concurrency    eventlet' in result.stdout, result.stdout
    assert 'Demo succeeded' in result.stdout, result.stdout
    assert 'UNEXPECTED' not in result.stdout, result.stdout
