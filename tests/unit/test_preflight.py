# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Start-up checks: each service names the option it cannot run without."""

import os
import signal
import subprocess
import sys
import time

from oslo_config import cfg
import pytest

from common import exception
from common import preflight
from common import rpc
from common import service

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

FULL = """[DEFAULT]
transport_url = rabbit://u:p@broker:5672/
[database]
connection = sqlite:////tmp/cell.db
[api_database]
connection = sqlite:////tmp/api.db
[placement_database]
connection = sqlite:////tmp/placement.db
"""


def _conf(tmp_path, text, driver=None):
    conf = cfg.ConfigOpts()
    rpc.register_opts(conf)
    conf.register_opt(cfg.StrOpt('servicegroup_driver', default='db'))
    for group in ('database', 'api_database', 'placement_database'):
        conf.register_opt(cfg.StrOpt('connection'), group=group)
    path = tmp_path / 'berth.conf'
    path.write_text(text + ('\n[DEFAULT]\nservicegroup_driver = %s\n'
                            % driver if driver else ''))
    conf(['--config-file', str(path)])
    return conf


@pytest.mark.parametrize('binary', sorted(preflight.REQUIRED))
def test_a_full_configuration_passes(tmp_path, binary):
    preflight.check(_conf(tmp_path, FULL), binary)


@pytest.mark.parametrize('binary,missing', [
    ('berth-scheduler', '[DEFAULT] transport_url and [api_database] '
                        'connection and [database] connection are not set'),
    ('berth-conductor', '[DEFAULT] transport_url and [api_database] '
                        'connection and [database] connection are not set'),
    ('berth-api', '[DEFAULT] transport_url and [api_database] connection '
                  'and [database] connection are not set'),
    ('berth-compute', '[DEFAULT] transport_url is not set'),
    ('berth-placement-api', '[placement_database] connection is not set'),
])
def test_an_empty_configuration_names_what_is_missing(
        tmp_path, binary, missing):
    with pytest.raises(preflight.Unusable) as err:
        preflight.check(_conf(tmp_path, ''), binary)
    assert str(err.value) == missing


@pytest.mark.parametrize('binary', ['berth-scheduler', 'berth-conductor',
                                    'berth-api'])
def test_each_database_is_named_alone(tmp_path, binary):
    text = FULL.replace('connection = sqlite:////tmp/api.db', '')
    with pytest.raises(preflight.Unusable) as err:
        preflight.check(_conf(tmp_path, text), binary)
    assert str(err.value) == '[api_database] connection is not set'


def test_cell_database_needed_only_for_db_heartbeats(tmp_path):
    text = FULL.replace('connection = sqlite:////tmp/cell.db', '')
    with pytest.raises(preflight.Unusable):
        preflight.check(_conf(tmp_path, text), 'berth-scheduler')
    preflight.check(_conf(tmp_path, text, driver='memory'),
                    'berth-scheduler')
    preflight.check(_conf(tmp_path, text), 'berth-compute')


def test_the_default_transport_url_does_not_count(tmp_path):
    text = FULL.replace('transport_url = rabbit://u:p@broker:5672/', '')
    with pytest.raises(preflight.Unusable) as err:
        preflight.check(_conf(tmp_path, text), 'berth-compute')
    assert 'transport_url' in str(err.value)


def test_fail_prints_one_line_and_exits_1(capsys):
    with pytest.raises(SystemExit) as err:
        preflight.fail('berth-x', 'it is broken')
    assert err.value.code == 1
    assert capsys.readouterr().err == 'berth-x: it is broken\n'


class _Unstartable(object):
    """A service whose start fails as a worker without a database does."""

    def start(self):
        raise exception.DBNotConfigured(name='cell ([database])')


def test_process_launcher_stops_when_workers_lack_configuration():
    launcher = service.ProcessLauncher(cfg.ConfigOpts())
    start = time.monotonic()
    previous = signal.getsignal(signal.SIGTERM)
    try:
        launcher.launch_service(_Unstartable(), workers=2)
        assert launcher.wait(poll=0.1) == 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert time.monotonic() - start < 10
    assert not launcher.children


@pytest.mark.parametrize('module,binary', [
    ('services.scheduler.cmd', 'berth-scheduler'),
    ('services.conductor.cmd', 'berth-conductor'),
    ('services.compute.cmd', 'berth-compute'),
    ('services.api.server', 'berth-api'),
    ('services.placement.server', 'berth-placement-api'),
])
def test_services_started_on_an_empty_config_exit_at_once(tmp_path, module,
                                                          binary):
    empty = tmp_path / 'empty.conf'
    empty.write_text('')
    env = dict(os.environ, PYTHONPATH=ROOT)
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, '-m', module, '--config-file', str(empty)],
        capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert time.monotonic() - start < 30
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines()
             if 'Warning' not in line and line.strip()
             and not line.startswith(' ')]
    assert lines[-1].startswith(binary + ': ')
    assert 'is not set' in lines[-1] or 'are not set' in lines[-1]
    assert 'Traceback' not in proc.stderr


def test_an_unreadable_config_file_is_one_line(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run(
        [sys.executable, '-m', 'services.scheduler.cmd', '--config-file',
         str(tmp_path / 'missing.conf')],
        capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert proc.returncode == 1
    assert ('berth-scheduler: cannot read configuration file(s): %s'
            % (tmp_path / 'missing.conf')) in proc.stderr
    assert 'Traceback' not in proc.stderr


def test_a_configured_service_passes_the_real_checks(tmp_path):
    """The real CONF: transport_url is registered by the check itself."""
    conf_file = tmp_path / 'berth.conf'
    conf_file.write_text(FULL)
    env = dict(os.environ, PYTHONPATH=ROOT)
    code = ('import sys; from common import preflight; '
            'preflight.start(sys.argv[1], sys.argv[2:]); print("ok")')
    for binary in sorted(preflight.REQUIRED):
        proc = subprocess.run(
            [sys.executable, '-c', code, binary, '--config-file',
             str(conf_file)],
            capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
        assert proc.returncode == 0, (binary, proc.stderr)
        assert proc.stdout.strip() == 'ok'
