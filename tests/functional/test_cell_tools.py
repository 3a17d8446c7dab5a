# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""cell_v2 verify_instance, update_cell, delete_cell and berth-status
upgrade check on MariaDB and PostgreSQL, through the real commands.

Each command runs as the operator runs it (a subprocess with a config
file); the rows it judges are seeded through Berth's record modules, and
its exit code and message are nova-manage's (nova-status's for the
upgrade check).
"""

import subprocess
import sys
import uuid as uuid_lib

from oslo_utils import timeutils
import pytest

from common.conf import CONF
from common.db import api_tables
from common.db import boot_records
from common.db import cells
from common.db import compute_records
from common.db import instance_records
from tests.functional import placement_server as placement_server_mod
# NOTE: the database fixtures of the placement suite (skip locally, fail
# in CI when a server is unreachable), reused rather than copied.
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional.placement.conftest import make_database  # noqa
from tests.functional.placement.conftest import real_backend  # noqa
from tests.unit.db import records_fixtures as fx

CELL1 = '4473067d-4c91-459f-93ae-79cb1e1203c7'
RABBIT = 'rabbit://guest:guest@127.0.0.1:5672/'


def _run(module, conf_file, *args):
    result = subprocess.run(
        [sys.executable, '-m', module, '--config-file', str(conf_file)] +
        list(args), capture_output=True, text=True, timeout=300)
    return result.returncode, result.stdout, result.stderr


def _manage(conf_file, *args):
    code, out, _err = _run('services.manage.main', conf_file, *args)
    return code, out.strip()


def _status(conf_file):
    code, out, err = _run('services.manage.status', conf_file, 'upgrade',
                          'check')
    assert code in (0, 1, 2), err
    return code, out


def _result(table, check):
    """The "Result:" line following "Check: <check>" in the table."""
    lines = [line.strip('| ').strip() for line in table.splitlines()]
    return lines[lines.index('Check: %s' % check) + 1]


class Deployment(object):
    """api, cell0, cell1 and placement databases on one backend."""

    def __init__(self, backend, make_db, tmp_path):
        self.urls = {name: make_db(backend)
                     for name in ('api', 'cell0', 'cell1', 'cell2')}
        self.placement = placement_server_mod.PlacementServer(
            make_db(backend), str(tmp_path))
        self.conf_file = tmp_path / 'berth.conf'
        self.conf_file.write_text(
            '[DEFAULT]\ntransport_url = %s\n'
            '[api_database]\nconnection = %s\n'
            '[database]\nconnection = %s\n'
            '[placement_database]\nconnection = %s\n'
            '[placement]\nauth_type = admin_token\ntoken = admin\n'
            'endpoint = %s\nendpoint_override = %s\n'
            '[oslo_policy]\npolicy_file = %s\n'
            % (RABBIT, self.urls['api'], self.urls['cell1'],
               self._placement_db_url(), self.placement.url,
               self.placement.url, tmp_path / 'no-policy.yaml'))
        self.api = cells.database_for_url('api test', self.urls['api'], CONF)
        self.cell1 = cells.database_for_url('cell1 test', self.urls['cell1'],
                                            CONF)
        self.cell2 = cells.database_for_url('cell2 test', self.urls['cell2'],
                                            CONF)

    def _placement_db_url(self):
        text = open(self.placement.conf_file).read()
        return text.split('[placement_database]\nconnection = ')[1] \
            .splitlines()[0]

    def map_cells(self):
        now = timeutils.utcnow()

        def insert(ctx):
            ctx.session.execute(api_tables.cell_mappings.insert(), [
                dict(uuid=cells.CELL0_UUID, name='cell0',
                     transport_url='none:///',
                     database_connection=self.urls['cell0'],
                     disabled=False, created_at=now),
                dict(uuid=CELL1, name='cell1', transport_url=RABBIT,
                     database_connection=self.urls['cell1'],
                     disabled=False, created_at=now)])
        self.api.writer(insert)(fx.ctxt())

    def instance(self, database, cell_uuid, deleted=False, mapped=True):
        inst = instance_records.create_instance(fx.ctxt(), database,
                                                fx.instance())
        if mapped:
            boot_records.create_instance_mapping(
                fx.ctxt(), inst.uuid, 'p1', cell_uuid, database=self.api)
        if deleted:
            instance_records.destroy_instance(fx.ctxt(), database, inst.uuid)
        return inst.uuid

    def cell(self, uuid):
        return boot_records.get_cell(fx.ctxt(), uuid, database=self.api)


@pytest.fixture
def deployment(real_backend, make_database, tmp_path):  # noqa
    made = Deployment(real_backend, make_database, tmp_path)
    try:
        made.placement.start()
    except placement_server_mod.ServerError as exc:
        pytest.fail(str(exc))
    yield made
    made.placement.stop()


def test_upgrade_check_and_cell_commands(deployment):
    d = deployment
    conf = d.conf_file
    assert _manage(conf, 'api_db', 'sync')[0] == 0
    code, table = _status(conf)
    assert code == 2
    assert _result(table, 'Cells v2') == 'Result: Failure'
    assert _result(table, 'Placement API') == 'Result: Success'
    d.map_cells()
    assert _manage(conf, 'db', 'sync')[0] == 0
    code, table = _status(conf)
    assert code == 0, table
    assert table.count('Result: Success') == 6

    # Computes but no host mapping at all: a failure; one compute that
    # discovery has not mapped yet: a warning.
    for host in ('h1', 'h2'):
        compute_records.save_compute_node(fx.ctxt(), d.cell1, host, host,
                                          dict(vcpus=4, memory_mb=4096))
    code, table = _status(conf)
    assert code == 2
    assert _result(table, 'Compute hosts mapped') == 'Result: Failure'
    boot_records.create_host_mapping(fx.ctxt(), 'h1', CELL1,
                                     database=d.api)
    code, table = _status(conf)
    assert code == 1
    assert _result(table, 'Compute hosts mapped') == 'Result: Warning'
    assert 'h2' in table
    boot_records.create_host_mapping(fx.ctxt(), 'h2', CELL1,
                                     database=d.api)
    assert _status(conf)[0] == 0

    # verify_instance: 0 mapped, 1 no mapping, 2 no cell, 3 deleted,
    # 4 archived.
    live = d.instance(d.cell1, CELL1)
    deleted = d.instance(d.cell1, CELL1, deleted=True)
    unplaced = str(uuid_lib.uuid4())
    boot_records.create_instance_mapping(fx.ctxt(), unplaced, 'p1',
                                         database=d.api)
    archived = str(uuid_lib.uuid4())
    boot_records.create_instance_mapping(fx.ctxt(), archived, 'p1', CELL1,
                                         database=d.api)
    assert _manage(conf, 'cell_v2', 'verify_instance', '--uuid', live) == (
        0, 'Instance %s is in cell: cell1 (%s)' % (live, CELL1))
    code, out = _manage(conf, 'cell_v2', 'verify_instance', '--uuid',
                        str(uuid_lib.uuid4()))
    assert code == 1 and 'is not mapped to a cell (upgrade is ' \
        'incomplete)' in out
    assert _manage(conf, 'cell_v2', 'verify_instance', '--uuid',
                   unplaced) == (2, 'Instance %s is not mapped to a cell'
                                 % unplaced)
    code, out = _manage(conf, 'cell_v2', 'verify_instance', '--uuid',
                        deleted)
    assert code == 3 and 'has been deleted' in out
    assert _manage(conf, 'cell_v2', 'verify_instance', '--uuid', archived,
                   '--quiet') == (4, '')

    # update_cell: 1 unknown, 4 both flags, 5 cell0, 3 clash, 0 done.
    update = ('cell_v2', 'update_cell', '--cell_uuid')
    code, out = _manage(conf, *update, 'nope', '--disable')
    assert (code, out) == (1, 'Cell with uuid nope was not found.')
    assert _manage(conf, *update, CELL1, '--disable', '--enable')[0] == 4
    # NOTE: as nova-manage, URLs not given come from the config file,
    # whose are cell1's here: they clash with cell1 before anything else.
    code, out = _manage(conf, *update, cells.CELL0_UUID, '--disable')
    assert code == 3 and out.splitlines()[0].startswith(
        '--transport-url not provided in the command line')
    assert _manage(conf, *update, cells.CELL0_UUID, '--disable',
                   '--transport-url', 'none:///', '--database_connection',
                   d.urls['cell0']) == (5, 'Cell0 cannot be disabled.')
    code, out = _manage(conf, *update, CELL1, '--disable', '--name', 'c1')
    assert code == 0, out
    assert (d.cell(CELL1).disabled, d.cell(CELL1).name) == (True, 'c1')
    code, out = _manage(conf, 'cell_v2', 'list_cells')
    assert [line.split('|')[5].strip() for line in out.splitlines()
            if CELL1 in line] == ['True']
    assert _manage(conf, *update, CELL1, '--enable')[0] == 0
    assert not d.cell(CELL1).disabled
    code, out = _manage(conf, 'cell_v2', 'create_cell', '--name', 'cell2',
                        '--transport-url', RABBIT + 'cell2',
                        '--database_connection', d.urls['cell2'],
                        '--verbose')
    assert code == 0, out
    cell2 = out.splitlines()[-1]
    code, out = _manage(conf, *update, cell2, '--database_connection',
                        d.urls['cell1'], '--transport-url', RABBIT + 'x')
    assert code == 3 and 'already exists for another cell with uuid %s' \
        % CELL1 in out
    assert d.cell(cell2).database_connection == d.urls['cell2']
    assert _manage(conf, 'db', 'sync')[0] == 0

    # delete_cell: 1 unknown, 2 hosts, 3 live instances, 4 mappings of
    # deleted instances, 0 deleted (with --force where needed).
    delete = ('cell_v2', 'delete_cell', '--cell_uuid')
    assert _manage(conf, *delete, 'nope')[0] == 1
    assert _manage(conf, *delete, CELL1) == (
        2, 'There are existing hosts mapped to cell with uuid %s.' % CELL1)
    assert _manage(conf, *delete, CELL1, '--force') == (
        3, 'There are existing instances mapped to cell with uuid %s.'
        % CELL1)
    gone = d.instance(d.cell2, cell2, deleted=True)
    code, out = _manage(conf, *delete, cell2)
    assert code == 4 and 'all instances have been deleted' in out
    assert _manage(conf, *delete, cell2, '--force') == (0, '')
    with pytest.raises(cells.CellMappingNotFound):
        d.cell(cell2)
    assert boot_records.get_instance_mapping(fx.ctxt(), gone,
                                             database=d.api) is None
    instance_records.destroy_instance(fx.ctxt(), d.cell1, live)
    assert _manage(conf, *delete, CELL1, '--force') == (0, '')
    assert boot_records.list_host_mappings(fx.ctxt(), database=d.api) == []
    assert [n['host'] for n in compute_records.list_unmapped_nodes(
        fx.ctxt(), d.cell1)] == ['h1', 'h2']

    # Only cell0 is left: the upgrade check fails on the cells.
    code, table = _status(conf)
    assert code == 2 and _result(table, 'Cells v2') == 'Result: Failure'
    assert _result(table, 'Database schemas') == 'Result: Success'
