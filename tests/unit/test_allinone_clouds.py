# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The clouds.yaml berth-all-in-one writes for the openstack client."""

import os
import stat
import types

import yaml

from services.allinone import clouds
from services.allinone import cmd
from services.allinone import state as state_mod

API = 'http://127.0.0.1:18774'


def test_written_entry_logs_in_at_the_identity_stand_in(tmp_path):
    state = state_mod.StateDir(str(tmp_path / 'state'))
    state.prepare()
    path = clouds.write(state, API + '/')
    assert path == str(tmp_path / 'state' / 'clouds.yaml')
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path) as f:
        text = f.read()
    assert 'production\n# uses Keystone' in text
    cloud = yaml.safe_load(text)['clouds']['berth']
    assert cloud['auth_type'] == 'password'
    assert cloud['auth']['auth_url'] == API + '/identity'
    assert cloud['auth']['username'] == 'admin'
    assert cloud['auth']['project_name'] == 'admin'
    assert cloud['region_name'] == 'RegionOne'
    assert cloud['interface'] == 'public'
    # NOTE: osc-placement's default (1.0) has no allocation candidates.
    assert cloud['placement_api_version'] == '1.39'
    assert clouds.export_line(path) == (
        'export OS_CLOUD=berth OS_CLIENT_CONFIG_FILE=%s' % path)


def _aio(strategy):
    conf = types.SimpleNamespace(api=types.SimpleNamespace(
        auth_strategy=strategy))
    return types.SimpleNamespace(conf=conf, api_url=API)


def test_only_a_noauth2_all_in_one_writes_one(tmp_path):
    state = state_mod.StateDir(str(tmp_path))
    assert cmd._write_clouds(_aio('keystone'), state) is None
    assert not os.path.exists(state.file('clouds.yaml'))
    lines = cmd._client_lines(_aio('keystone'), None)
    assert 'Keystone' in lines[0]
    path = cmd._write_clouds(_aio('noauth2'), state)
    lines = cmd._client_lines(_aio('noauth2'), path)
    assert '  ' + clouds.export_line(path) in lines
    assert any('production uses Keystone' in line for line in lines)
