# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-all-in-one`` as a user runs it: the README's first command.

The installed console script runs as a subprocess, exactly as typed:

- ``--demo`` on the embedded default (SQLite in a state directory,
  ``fake://``) must finish with exit status 0, having printed the
  endpoints, the client environment, and for every demo server where it
  landed and why;
- without ``--demo`` it serves until SIGTERM: the APIs answer, the derived
  ``berth.conf`` works for ``berth-manage``, and SIGTERM ends it cleanly;
- pointed by ``--config-file`` at RabbitMQ and MariaDB or PostgreSQL, the
  same demo runs on the real parts.

Ports are free ones picked by the test, so that it runs beside anything.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.functional import placement_server
# NOTE: the database fixtures of the placement suite (skip locally, fail
# in CI when a server is unreachable), reused rather than copied.
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional.placement.conftest import make_database  # noqa
from tests.functional.placement.conftest import real_backend  # noqa

DEMO_TIMEOUT = 300
READY_TIMEOUT = 120
STOP_TIMEOUT = 60
# NOTE: the README promises "ready in seconds"; generous for a loaded CI
# machine, far below anything a user would call slow.
READY_SECONDS = 30
DEMO_SERVERS = ('web-1', 'fast-1', 'slow-1', 'fast-az2', 'pinned-1',
                'medium-1', 'huge-1')


def _command(state_dir, *args):
    binary = placement_server.bin_path('berth-all-in-one')
    assert binary, 'berth-all-in-one is not installed (pip install -e .)'
    return [binary, '--state-dir', str(state_dir),
            '--api-port', str(placement_server.free_port()),
            '--placement-port', str(placement_server.free_port())] + list(
                args)


def _environ():
    env = dict(os.environ)
    # NOTE: native threads, whatever the caller's shell says.
    env.pop('BERTH_EVENTLET', None)
    return env


def _log_tail(state_dir, lines=60):
    try:
        with open(os.path.join(str(state_dir), 'berth.log')) as f:
            return ''.join(f.readlines()[-lines:])
    except OSError:
        return '(no log)'


def _run_demo(state_dir, *args):
    result = subprocess.run(
        _command(state_dir, '--demo', '--hosts', '4', *args),
        capture_output=True, text=True, timeout=DEMO_TIMEOUT,
        env=_environ())
    output = result.stdout + result.stderr
    assert result.returncode == 0, '%s\n--- log ---\n%s' % (
        output, _log_tail(state_dir))
    return result.stdout


def _check_demo_report(out, ready_seconds=READY_SECONDS):
    """The banner, then each server with its host and its reason."""
    ready = re.search(r'is ready in ([0-9.]+)s: 4 compute hosts', out)
    assert ready, out
    assert float(ready.group(1)) < ready_seconds, out
    assert re.search(r'compute API +http://127\.0\.0\.1:\d+/v2\.1', out)
    assert re.search(r'placement API +http://127\.0\.0\.1:\d+', out)
    assert re.search(r'^  export OS_CLOUD=berth OS_CLIENT_CONFIG_FILE=\S+'
                     r'/clouds\.yaml$', out, re.M), out
    assert 'concurrency    native threads' in out
    for name in DEMO_SERVERS:
        line = re.search(r'^%s +(ACTIVE|ERROR) +host (\S+) .* as expected$'
                         % re.escape(name), out, re.M)
        assert line, 'no good report line for %s:\n%s' % (name, out)
    # NOTE: the reasons: a filter's rejection for the io= flavors, the
    # NoValidHost faults, the placement query, the weighers.
    assert 'AggregateInstanceExtraSpecsFilter removed' in out
    assert out.count('fault: No valid host was found.') == 2
    assert 'placement found no candidate for resources=DISK_GB:4096' in out
    assert 'PCPU:2' in out
    assert 'RAMWeigher' in out
    assert 'Demo succeeded' in out


def test_demo_on_the_embedded_default(tmp_path):
    """The README's first command: SQLite, fake://, exit status 0."""
    state_dir = tmp_path / 'state'
    out = _run_demo(state_dir)
    _check_demo_report(out)
    for name in ('api.sqlite', 'cell0.sqlite', 'cell1.sqlite',
                 'placement.sqlite', 'berth.conf', 'berth.log',
                 'clouds.yaml'):
        assert (state_dir / name).exists(), name
    # NOTE: a second run on the same state reuses what the first seeded
    # and replaces the first run's servers (no quota trouble).
    _check_demo_report(_run_demo(state_dir))


def _wait_ready(proc, out_file):
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        text = out_file.read_text()
        if 'is ready in' in text:
            return text
        assert proc.poll() is None, text
        time.sleep(0.2)
    pytest.fail('not ready in %ds:\n%s' % (READY_TIMEOUT,
                                           out_file.read_text()))


def _get(url, version):
    req = urllib.request.Request(url, headers={
        'X-Auth-Token': 'admin', 'OpenStack-API-Version': version})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


@pytest.fixture
def serving(tmp_path):
    """A served all-in-one (3 hosts): (process, its banner, state dir)."""
    state_dir = tmp_path / 'state'
    out_file = tmp_path / 'out'
    with open(out_file, 'w') as out:
        proc = subprocess.Popen(_command(state_dir, '--hosts', '3'),
                                stdout=out, stderr=subprocess.STDOUT,
                                env=_environ(), start_new_session=True)
    try:
        yield proc, _wait_ready(proc, out_file), state_dir
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_serves_until_sigterm(serving):
    """Without --demo: the APIs answer until SIGTERM ends it with 0."""
    proc, text, state_dir = serving
    compute = re.search(r'compute API +(\S+)', text).group(1)
    placement = re.search(r'placement API +(\S+)', text).group(1)
    hypervisors = _get(compute + '/os-hypervisors',
                       'compute 2.79')['hypervisors']
    assert sorted(h['hypervisor_hostname'] for h in hypervisors) == [
        'compute0', 'compute1', 'compute2']
    assert {h['state'] for h in hypervisors} == {'up'}
    providers = _get(placement + '/resource_providers',
                     'placement 1.14')['resource_providers']
    assert len(providers) == 3
    # NOTE: the capacity report page the banner names, for admins.
    report = re.search(r'capacity report +(\S+)', text).group(1)
    req = urllib.request.Request(report, headers={'X-Auth-Token': 'admin'})
    with urllib.request.urlopen(req, timeout=60) as resp:
        page = resp.read().decode('utf-8')
    assert '3 compute hosts' in page and '<svg' in page
    # NOTE: the derived config file works for berth-manage.
    result = subprocess.run(
        [sys.executable, '-m', 'services.manage.main', '--config-file',
         str(state_dir / 'berth.conf'), 'cell_v2', 'list_hosts'],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for host in ('compute0', 'compute1', 'compute2'):
        assert host in result.stdout, result.stdout
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(STOP_TIMEOUT) == 0, text


OPENSTACK = (os.environ.get('BERTH_OPENSTACK_CLI') or
             placement_server.bin_path('openstack'))


@pytest.mark.skipif(OPENSTACK is None,
                    reason='the openstack CLI is not installed (pip install '
                           'python-openstackclient), or set '
                           'BERTH_OPENSTACK_CLI')
def test_printed_environment_works_with_the_openstack_cli(serving):
    """The banner's ``export`` lines, pasted, make the CLI work."""
    _proc, text, _state_dir = serving
    env = dict(os.environ)
    for line in text.splitlines():
        if line.strip().startswith('export '):
            for item in line.split()[1:]:
                name, _sep, value = item.partition('=')
                env[name] = value
    result = subprocess.run([OPENSTACK, 'hypervisor', 'list', '-f', 'json'],
                            capture_output=True, text=True, timeout=120,
                            env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    names = sorted(h['Hypervisor Hostname']
                   for h in json.loads(result.stdout))
    assert names == ['compute0', 'compute1', 'compute2']


def test_demo_on_real_parts(real_backend, make_database,  # noqa
                            database_servers, vhost, tmp_path):  # noqa
    """--config-file with RabbitMQ and MariaDB/PostgreSQL: same demo."""
    urls = {name: make_database(real_backend)
            for name in ('api', 'cell1', 'placement')}
    # NOTE: the all-in-one creates cell0 beside cell1 (<cell1>_cell0),
    # as nova-manage simple_cell_setup names it; the session's database
    # server drops it with the others.
    cell1 = urls['cell1'].rsplit('/', 1)[1].split('?')[0]
    database_servers[real_backend].created.append(cell1 + '_cell0')
    conf_file = tmp_path / 'berth.conf'
    conf_file.write_text('\n'.join([
        '[DEFAULT]', 'transport_url = %s' % vhost.url,
        '[api_database]', 'connection = %s' % urls['api'],
        '[database]', 'connection = %s' % urls['cell1'],
        '[placement_database]', 'connection = %s' % urls['placement'],
    ]) + '\n')
    out = _run_demo(tmp_path / 'state', '--config-file', str(conf_file))
    # NOTE: four schemas on a database server take longer than SQLite.
    _check_demo_report(out, ready_seconds=READY_TIMEOUT)
    assert 'transport      rabbit://' in out
    assert cell1 in out


def _cloud_environ(text):
    """Only what the banner's export line sets, and a PATH."""
    [line] = [line for line in text.splitlines()
              if line.strip().startswith('export OS_CLOUD=')]
    env = {'PATH': os.environ.get('PATH', '/usr/bin:/bin'),
           'LANG': 'C.UTF-8'}
    for item in line.split()[1:]:
        name, _sep, value = item.partition('=')
        env[name] = value
    assert set(env) == {'PATH', 'LANG', 'OS_CLOUD',
                        'OS_CLIENT_CONFIG_FILE'}, env
    return env


def _openstack(env, home, *args):
    # NOTE: a HOME of its own, so no clouds.yaml of the user's is read.
    env = dict(env, HOME=str(home))
    result = subprocess.run([OPENSTACK] + list(args) + ['-f', 'json'],
                            capture_output=True, text=True, timeout=120,
                            env=env)
    assert result.returncode == 0, '%s: %s%s' % (
        ' '.join(args), result.stdout, result.stderr)
    return json.loads(result.stdout)


@pytest.mark.skipif(OPENSTACK is None,
                    reason='the openstack CLI is not installed (pip install '
                           '-e .[client]), or set BERTH_OPENSTACK_CLI')
def test_the_berth_cloud_entry_alone_drives_the_cli(serving, tmp_path):
    """issue 20's Done-when 1: OS_CLOUD=berth and nothing else.

    The five commands that needed overrides, a token and a microversion
    before: compute, identity (quota show looks the project up),
    availability zones (which asks the catalog for volume and network),
    and two placement ones through osc-placement.
    """
    _proc, text, state_dir = serving
    env = _cloud_environ(text)
    assert env['OS_CLOUD'] == 'berth'
    assert env['OS_CLIENT_CONFIG_FILE'] == str(state_dir / 'clouds.yaml')
    home = tmp_path / 'home'
    home.mkdir()
    assert _openstack(env, home, 'server', 'list') == []
    quota = {row['Resource']: row['Limit']
             for row in _openstack(env, home, 'quota', 'show')}
    assert quota['instances'] == 10 and quota['cores'] == 20, quota
    zones = {row['Zone Name'] for row in _openstack(
        env, home, 'availability', 'zone', 'list')}
    assert zones == {'nova', 'internal'}, zones
    providers = sorted(row['name'] for row in _openstack(
        env, home, 'resource', 'provider', 'list'))
    assert providers == ['compute0', 'compute1', 'compute2']
    candidates = _openstack(env, home, 'allocation', 'candidate', 'list',
                            '--resource', 'VCPU=1')
    assert len(candidates) == 3, candidates
    assert {row['allocation'] for row in candidates} == {'VCPU=1'}
