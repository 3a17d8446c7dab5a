# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Guard tests for the systemd units in etc/systemd/.

A unit names a binary and a config file that packagers and operators rely
on, so a renamed console script or a forgotten ``--config-file`` must fail
here rather than on a production host. Where ``systemd-analyze`` exists,
each unit also goes through ``systemd-analyze verify``.
"""

import configparser
import importlib
import os
import shlex
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
UNIT_DIR = os.path.join(ROOT, 'etc', 'systemd')
CONFIG_FILE = '/etc/berth/berth.conf'

# NOTE: unit -> binary. These are the names doc/architecture.md's process
# table gives; a unit added without a line here fails
# test_every_unit_is_known.
UNITS = {
    'berth-api.service': 'berth-api',
    'berth-conductor.service': 'berth-conductor',
    'berth-scheduler.service': 'berth-scheduler',
    'berth-compute.service': 'berth-compute',
    'berth-placement.service': 'berth-placement-api',
}
# NOTE: the two HTTP APIs run under uWSGI (unit -> its config file in
# etc/berth/ and the WSGI module it serves); the other units run their
# console script.
UWSGI = {
    'berth-api.service': ('berth-api-uwsgi.ini', 'services.api.wsgi'),
    'berth-placement.service': ('berth-placement-uwsgi.ini',
                                'services.placement.wsgi'),
}
# NOTE: the RPC services run common/service.py's launchers, which reload
# the mutable options on SIGHUP; a uWSGI master replaces its workers on
# SIGHUP, and they read the config file again.
RELOADABLE = {'berth-conductor', 'berth-scheduler', 'berth-compute',
              'berth-api', 'berth-placement-api'}


def _console_scripts():
    """The console script names setup.cfg declares."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(os.path.join(ROOT, 'setup.cfg'))
    text = parser.get('options.entry_points', 'console_scripts')
    return {line.split('=', 1)[0].strip() for line in text.splitlines()
            if '=' in line}


def _parse_unit(name):
    """The unit as {section: {key: value}}, keys case-preserved."""
    # NOTE: interpolation off for $MAINPID; strict off because systemd
    # allows a key to repeat (this test only reads single-valued keys).
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    parser.read(os.path.join(UNIT_DIR, name))
    return {section: dict(parser.items(section))
            for section in parser.sections()}


def test_every_unit_is_known():
    """etc/systemd holds exactly the units this test knows."""
    found = {n for n in os.listdir(UNIT_DIR) if n.endswith('.service')}
    assert found == set(UNITS)


def _exec_start(unit):
    return shlex.split(_parse_unit(unit)['Service']['ExecStart'])


def _uwsgi_ini(name):
    """The [uwsgi] section of etc/berth/``name`` as {key: [values]}."""
    values = {}
    with open(os.path.join(ROOT, 'etc', 'berth', name)) as f:
        for line in f:
            key, sep, value = line.partition('=')
            if sep and not line.startswith('#'):
                values.setdefault(key.strip(), []).append(value.strip())
    return values


@pytest.mark.parametrize('unit', sorted(set(UNITS) - set(UWSGI)))
def test_unit_runs_a_console_script_with_the_config_file(unit):
    """ExecStart is /usr/bin/<console script> --config-file <file>."""
    argv = _exec_start(unit)
    binary = os.path.basename(argv[0])
    assert argv[0] == '/usr/bin/' + binary
    assert binary == UNITS[unit]
    assert binary in _console_scripts(), (
        '%s runs %s, which setup.cfg does not declare' % (unit, binary))
    assert argv[1:] == ['--config-file', CONFIG_FILE]


@pytest.mark.parametrize('unit', sorted(UWSGI))
def test_http_units_run_the_wsgi_application_under_uwsgi(unit):
    """uwsgi --ini /etc/berth/<shipped ini>, serving the API's module."""
    ini, module = UWSGI[unit]
    assert _exec_start(unit) == ['/usr/bin/uwsgi', '--ini',
                                 '/etc/berth/' + ini]
    options = _uwsgi_ini(ini)
    assert options['module'] == [module + ':application']
    assert options['env'] == ['BERTH_CONFIG_FILE=' + CONFIG_FILE]
    assert callable(importlib.import_module(module).application)
    # NOTE: what makes it a production server: worker processes, a
    # master that stops them on SIGTERM, and bounded requests.
    assert int(options['processes'][0]) > 1
    for key in ('master', 'die-on-term', 'lazy-apps', 'need-app',
                'strict', 'no-orphans'):
        assert options[key] == ['true'], key
    for key in ('http-headers-timeout', 'http-timeout', 'socket-timeout',
                'harakiri', 'limit-post', 'buffer-size'):
        assert int(options[key][0]) > 0, key
    # NOTE: the HTTP router, not http-socket: workers would read the
    # headers themselves, and slow clients would hold them.
    assert len(options['http']) == 1 and 'http-socket' not in options


@pytest.mark.parametrize('unit', sorted(UNITS))
def test_unit_service_settings(unit):
    """The house settings: simple, restarted on failure, own user."""
    parsed = _parse_unit(unit)
    service = parsed['Service']
    assert service['Type'] == 'simple'
    assert service['Restart'] == 'on-failure'
    assert service['User'] == 'berth'
    assert service['KillMode'] == 'process'
    assert parsed['Unit']['After'] == 'network-online.target'
    assert parsed['Install']['WantedBy'] == 'multi-user.target'


@pytest.mark.parametrize('unit', sorted(UNITS))
def test_reload_only_where_sighup_is_handled(unit):
    """ExecReload sends SIGHUP to the RPC services, to nothing else."""
    service = _parse_unit(unit)['Service']
    if UNITS[unit] in RELOADABLE:
        assert service.get('ExecReload') == '/bin/kill -HUP $MAINPID'
    else:
        assert 'ExecReload' not in service


@pytest.mark.skipif(shutil.which('systemd-analyze') is None,
                    reason='systemd-analyze is not installed')
def test_systemd_analyze_verify(tmp_path):
    """``systemd-analyze verify`` reports nothing about any unit.

    NOTE: verify fails a unit whose ExecStart binary does not exist, and
    /usr/bin/berth-* exist only on a packaged host; the copies checked here
    run /bin/true with the same arguments instead (the binary's name is
    test_unit_runs_a_console_script_with_the_config_file's business).
    verify only warns (exit status 0) about unknown keys or bad values, so
    any output at all fails the test.
    """
    paths = []
    for unit in sorted(UNITS):
        with open(os.path.join(UNIT_DIR, unit)) as f:
            text = f.read()
        binary = 'uwsgi' if unit in UWSGI else UNITS[unit]
        text = text.replace('ExecStart=/usr/bin/%s ' % binary,
                            'ExecStart=/bin/true ')
        path = tmp_path / unit
        path.write_text(text)
        paths.append(str(path))
    result = subprocess.run(['systemd-analyze', 'verify'] + paths,
                            capture_output=True, text=True, timeout=60,
                            cwd=str(tmp_path))
    output = (result.stdout + result.stderr).strip()
    assert result.returncode == 0 and not output, output
