# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""berth-manage cell_v2 update_cell, delete_cell, verify_instance."""

import pytest

from common.conf import CONF
from common.db import boot_records
from common.db import cells
from common.db import compute_records
from common.db import instance_records
from common import rpc
from services.manage import cell_admin
from services.manage import cell_v2
from services.scheduler.sources import database as db_source
from tests.unit.conductor import fakes
from tests.unit.db import records_fixtures as fx

CELL1 = fakes.CELL1_UUID


@pytest.fixture(autouse=True)
def no_configured_urls():
    """Neither [DEFAULT] transport_url nor [database] connection set."""
    rpc.register_opts(CONF)
    CONF.set_override('transport_url', '')
    CONF.set_override('connection', None, group='database')
    yield
    CONF.clear_override('transport_url')
    CONF.clear_override('connection', group='database')


def _cell(world, uuid):
    return boot_records.get_cell(fx.ctxt(), uuid, database=world.api)


def _new_cell(manage, capsys, name='cell2'):
    assert manage(cell_v2.create_cell, 'cell_v2', cell_name=name,
                  transport_url='rabbit://u:p@%s:5672/' % name,
                  database_connection='sqlite:////nowhere/%s' % name,
                  disabled=False, verbose=True) == 0
    return capsys.readouterr().out.strip()


def _update(manage, uuid, **args):
    values = dict(cell_uuid=uuid, cell_name=None, transport_url=None,
                  database_connection=None, disable=False, enable=False)
    values.update(args)
    return manage(cell_admin.update_cell, 'cell_v2', **values)


def test_update_cell_disable_enable_and_rename(manage, world, capsys):
    assert _update(manage, CELL1, disable=True) == 0
    assert _cell(world, CELL1).disabled
    assert capsys.readouterr().out == ''
    assert _update(manage, CELL1, disable=True) == 0
    assert capsys.readouterr().out == 'Cell %s is already disabled\n' % CELL1
    assert manage(cell_v2.list_cells, 'cell_v2', verbose=False) == 0
    row = [line for line in capsys.readouterr().out.splitlines()
           if CELL1 in line][0]
    assert row.split('|')[5].strip() == 'True'
    assert _update(manage, CELL1, enable=True, cell_name='renamed') == 0
    cell = _cell(world, CELL1)
    assert (cell.disabled, cell.name) == (False, 'renamed')
    assert cell.transport_url == 'fake://'
    assert _update(manage, CELL1, enable=True) == 0
    assert capsys.readouterr().out == 'Cell %s is already enabled\n' % CELL1


def test_the_scheduler_skips_a_disabled_cell(manage, world):
    def cell_uuids():
        source = db_source.DatabaseHostSource(
            api_database=world.api, cell_databases=world.registry)
        return [uuid for uuid, _db in source.cells(fx.ctxt())]
    assert cell_uuids() == [CELL1]
    assert _update(manage, CELL1, disable=True) == 0
    assert cell_uuids() == []
    assert _update(manage, CELL1, enable=True) == 0
    assert cell_uuids() == [CELL1]


def test_update_cell_exit_codes(manage, world, capsys):
    assert _update(manage, 'nope', disable=True) == 1
    assert capsys.readouterr().out == 'Cell with uuid nope was not found.\n'
    assert _update(manage, CELL1, disable=True, enable=True) == 4
    assert 'disabled and enabled at the same time' in \
        capsys.readouterr().out
    assert _update(manage, cells.CELL0_UUID, disable=True) == 5
    assert capsys.readouterr().out == 'Cell0 cannot be disabled.\n'
    assert not _cell(world, CELL1).disabled
    uuid = _new_cell(manage, capsys)
    assert _update(manage, uuid, transport_url='fake://') == 3
    assert 'already exists for another cell with uuid %s' % CELL1 in \
        capsys.readouterr().out
    assert _cell(world, uuid).transport_url == 'rabbit://u:p@cell2:5672/'
    assert _update(manage, uuid, transport_url='rabbit://new:5672/',
                   database_connection='sqlite:////elsewhere') == 0
    cell = _cell(world, uuid)
    assert (cell.transport_url, cell.database_connection) == (
        'rabbit://new:5672/', 'sqlite:////elsewhere')


def test_update_cell_takes_unset_urls_from_the_config(manage, world,
                                                      capsys):
    uuid = _new_cell(manage, capsys)
    CONF.set_override('transport_url', 'rabbit://conf:5672/')
    assert _update(manage, uuid, disable=True) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ['--transport-url not provided in the command line, using '
                   'the value [DEFAULT]/transport_url from the '
                   'configuration file']
    cell = _cell(world, uuid)
    assert (cell.transport_url, cell.disabled) == ('rabbit://conf:5672/',
                                                   True)
    assert cell.database_connection == 'sqlite:////nowhere/cell2'


def test_update_cell_failure_is_exit_2(manage, world, capsys, monkeypatch):
    class Broken(object):
        """The api database, but every write fails."""

        def __getattr__(self, name):
            return getattr(world.api, name)

        def writer(self, fn):
            def run(ctxt):
                raise RuntimeError('disk full')
            return run
    monkeypatch.setattr(cell_admin, '_api', lambda conf: Broken())
    assert _update(manage, CELL1, disable=True) == 2
    assert capsys.readouterr().out == \
        'Unable to update CellMapping: disk full\n'


def _delete(manage, uuid, force=False):
    return manage(cell_admin.delete_cell, 'cell_v2', cell_uuid=uuid,
                  force=force)


def test_delete_cell_empty_and_unknown(manage, world, capsys):
    assert _delete(manage, 'nope') == 1
    assert capsys.readouterr().out == 'Cell with uuid nope was not found.\n'
    uuid = _new_cell(manage, capsys)
    assert _delete(manage, uuid) == 0
    with pytest.raises(cells.CellMappingNotFound):
        _cell(world, uuid)


def test_delete_cell_with_hosts_and_instances(manage, world, capsys):
    assert _delete(manage, CELL1) == 2
    assert capsys.readouterr().out == \
        'There are existing hosts mapped to cell with uuid %s.\n' % CELL1
    live = instance_records.create_instance(fx.ctxt(), world.cell1,
                                            fx.instance())
    gone = instance_records.create_instance(fx.ctxt(), world.cell1,
                                            fx.instance())
    for inst in (live, gone):
        boot_records.create_instance_mapping(fx.ctxt(), inst.uuid, 'p1',
                                             CELL1, database=world.api)
    assert _delete(manage, CELL1, force=True) == 3
    assert capsys.readouterr().out == \
        'There are existing instances mapped to cell with uuid %s.\n' % CELL1
    instance_records.destroy_instance(fx.ctxt(), world.cell1, live.uuid)
    instance_records.destroy_instance(fx.ctxt(), world.cell1, gone.uuid)
    assert _cell(world, CELL1).uuid == CELL1
    assert _delete(manage, CELL1, force=True) == 0
    with pytest.raises(cells.CellMappingNotFound):
        _cell(world, CELL1)
    assert boot_records.list_host_mappings(fx.ctxt(), database=world.api) \
        == []
    assert boot_records.get_instance_mapping(
        fx.ctxt(), live.uuid, database=world.api) is None
    # NOTE: the nodes can be discovered again into a new cell.
    assert sorted(n['host'] for n in compute_records.list_unmapped_nodes(
        fx.ctxt(), world.cell1)) == ['h1', 'h2', 'h3']


def test_delete_cell_with_only_deleted_instances_needs_force(
        manage, world, capsys):
    uuid = _new_cell(manage, capsys)
    update = cell_admin._CM.update().where(
        cell_admin._CM.c.uuid == uuid).values(
        database_connection=world.cell1.connection)
    world.api.writer(lambda ctx: ctx.session.execute(update))(fx.ctxt())
    inst = instance_records.create_instance(fx.ctxt(), world.cell1,
                                            fx.instance())
    instance_records.destroy_instance(fx.ctxt(), world.cell1, inst.uuid)
    boot_records.create_instance_mapping(fx.ctxt(), inst.uuid, 'p1',
                                         uuid, database=world.api)
    assert _delete(manage, uuid) == 4
    out = capsys.readouterr().out.splitlines()
    assert out == [
        'There are instance mappings to cell with uuid %s, but all '
        'instances have been deleted in the cell.' % uuid,
        "So execute 'berth-manage db archive_deleted_rows' to delete "
        "the instance mappings."]
    assert _delete(manage, uuid, force=True) == 0
    assert boot_records.get_instance_mapping(
        fx.ctxt(), inst.uuid, database=world.api) is None


def _verify(manage, uuid, quiet=False):
    return manage(cell_admin.verify_instance, 'cell_v2', uuid=uuid,
                  quiet=quiet)


def test_verify_instance_exit_codes(manage, world, capsys):
    assert _verify(manage, 'ghost') == 1
    assert capsys.readouterr().out == (
        'Instance ghost is not mapped to a cell (upgrade is incomplete) or '
        'instance does not exist\n')
    inst = instance_records.create_instance(fx.ctxt(), world.cell1,
                                            fx.instance())
    boot_records.create_instance_mapping(fx.ctxt(), inst.uuid, 'p1',
                                         database=world.api)
    assert _verify(manage, inst.uuid) == 2
    assert capsys.readouterr().out == \
        'Instance %s is not mapped to a cell\n' % inst.uuid
    boot_records.set_instance_mapping_cell(fx.ctxt(), inst.uuid, CELL1,
                                           database=world.api)
    assert _verify(manage, inst.uuid) == 0
    assert capsys.readouterr().out == \
        'Instance %s is in cell: cell1 (%s)\n' % (inst.uuid, CELL1)
    instance_records.destroy_instance(fx.ctxt(), world.cell1, inst.uuid)
    assert _verify(manage, inst.uuid) == 3
    out = capsys.readouterr().out.splitlines()
    assert out[0] == 'The instance with uuid %s has been deleted.' % (
        inst.uuid)
    assert 'archive_deleted_rows' in out[1]
    assert _verify(manage, inst.uuid, quiet=True) == 3
    assert capsys.readouterr().out == ''

    def drop(ctx):
        from common.db import cell_tables
        ctx.session.execute(cell_tables.instances.delete())
    world.cell1.writer(drop)(fx.ctxt())
    assert _verify(manage, inst.uuid) == 4
    assert capsys.readouterr().out.splitlines() == [
        'The instance with uuid %s has been archived.' % inst.uuid,
        'However its instance_mapping remains.']
