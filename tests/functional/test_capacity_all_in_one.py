# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Headroom is exact on the all-in-one too: it says N, and N+1 boots one
by one make N ACTIVE and 1 ERROR.

``berth-all-in-one`` runs as a user runs it (the installed command, its
SQLite databases and in-process ``fake://`` RPC), given a config file
for its two simulated hosts: 8 CPUs in 2 NUMA cells (4 shared, 4
dedicated), 4 GiB of which 512 MiB per cell are 2 MiB huge pages, and
the filters of tests/functional/test_capacity.py (its multi-process
twin). Headroom is asked of the API (the in-process scheduler) and of
``berth-manage capacity headroom`` on the derived ``berth.conf``; both
must say the same, and the boots must agree.
"""

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from tests.functional import stack as stack_mod
# NOTE: the all-in-one as test_all_in_one starts it (its command line,
# environment and readiness wait), reused rather than copied.
from tests.functional.test_all_in_one import _command
from tests.functional.test_all_in_one import _environ
from tests.functional.test_all_in_one import _wait_ready

HOSTS = 2
FILTERS = ('AvailabilityZoneFilter', 'ComputeFilter',
           'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
           'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter',
           'NUMATopologyFilter')
CONF = """[fake_driver]
vcpus = 8
memory_mb = 4096
numa_cells = 2
hugepages = 2048:256
[compute]
cpu_shared_set = 0-3
cpu_dedicated_set = 4-7
[filter_scheduler]
enabled_filters = %s
""" % ','.join(FILTERS)
FLAVORS = {
    'plain': dict(vcpus=1, ram=1280),
    # NOTE: a pinned CPU of one NUMA cell: the NUMA fit decides.
    'pinned': dict(vcpus=1, ram=256, extra_specs={
        'hw:cpu_policy': 'dedicated', 'hw:numa_nodes': '1'}),
    # NOTE: 2 MiB pages and a shared CPU: one per host, in cell 0 (all
    # the shared CPUs, 512 MiB of pages), though placement's MEMORY_MB
    # would take ten per host.
    'hugepages': dict(vcpus=1, ram=384, extra_specs={
        'hw:mem_page_size': '2048'}),
}


class _AllInOne(object):
    """A served all-in-one: its compute client and berth-manage."""

    def __init__(self, text, state_dir):
        compute = re.search(r'compute API +(\S+)', text).group(1)
        self.compute = stack_mod.ComputeClient(
            compute.rsplit('/v2.1', 1)[0])
        self.conf_file = str(state_dir / 'berth.conf')
        self.flavors = {name: self.compute.create_flavor(name, disk=1, **spec)
                        for name, spec in FLAVORS.items()}
        self.image = self.compute.create_image('cirros')

    def manage(self, *args):
        result = subprocess.run(
            [sys.executable, '-m', 'services.manage.main', '--config-file',
             self.conf_file] + list(args), capture_output=True, text=True,
            timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout


@pytest.fixture(scope='module')
def aio(tmp_path_factory):
    base = tmp_path_factory.mktemp('capacity-aio')
    conf = base / 'hosts.conf'
    conf.write_text(CONF)
    out_file = base / 'out'
    with open(out_file, 'w') as out:
        proc = subprocess.Popen(
            _command(base / 'state', '--hosts', str(HOSTS),
                     '--config-file', str(conf)),
            stdout=out, stderr=subprocess.STDOUT, env=_environ(),
            start_new_session=True)
    try:
        cloud = _AllInOne(_wait_ready(proc, out_file), base / 'state')
        yield cloud
        cloud.compute.close()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _headroom(aio, flavor, hint=None):
    """The API's headroom total, checked against berth-manage's."""
    args = ['capacity', 'headroom', '--flavor', flavor, '--json']
    query = '?flavor=%s' % flavor
    if hint:
        args += ['--hint', hint]
        query += '&hint=%s' % hint.replace('=', '%3D')
    answer = aio.compute.request('GET', '/os-berth-capacity/headroom' +
                                 query)['headroom']
    offline = json.loads(aio.manage(*args))
    assert offline['total'] == answer['total'], (answer, offline)
    assert sum(answer['per_host'].values()) == answer['total']
    return answer['total']


def _boot_one_by_one(aio, flavor, count, hints=None):
    """Statuses of ``count`` servers booted one after the other (each
    ACTIVE or ERROR before the next); they are deleted afterwards.
    """
    api = aio.compute
    servers, statuses = [], []
    try:
        for index in range(count):
            server = api.create_server('%s-%d' % (flavor, index),
                                       aio.flavors[flavor], aio.image,
                                       hints=hints)
            servers.append(server['id'])
            statuses.append(api.wait_for_server(server['id'])['status'])
    finally:
        for server_id in servers:
            api.delete_server(server_id)
    return statuses


@pytest.mark.parametrize('flavor', ['pinned', 'hugepages', 'plain'])
def test_headroom_then_n_plus_one_boots(aio, flavor):
    total = _headroom(aio, flavor)
    assert total > 0
    if flavor == 'hugepages':
        # NOTE: the pages decide (see the flavor).
        assert total == HOSTS
    statuses = _boot_one_by_one(aio, flavor, total + 1)
    assert statuses == ['ACTIVE'] * total + ['ERROR'], (total, statuses)


def test_anti_affinity_max_server_per_host(aio):
    group = aio.compute.create_server_group(
        'spread', 'anti-affinity', rules={'max_server_per_host': 2})
    total = _headroom(aio, 'plain', hint='group=%s' % group)
    assert total == 2 * HOSTS
    statuses = _boot_one_by_one(aio, 'plain', total + 1,
                                hints={'group': group})
    assert statuses == ['ACTIVE'] * total + ['ERROR']
