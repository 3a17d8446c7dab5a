# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Build requests, request specs and mappings in the api database."""

from oslo_db import exception as db_exc
import pytest

from common.db import api as db_api
from common.db import api_tables
from common.db import boot_records
from common.db import cells
from common import exception
from tests.unit.db import records_fixtures as fx


@pytest.fixture
def api(tmp_path):
    database = fx.api_database(tmp_path)
    cell1 = fx.cell_database(tmp_path)
    fx.map_cell(database, cells.CELL0_UUID, 'cell0', cell1)
    fx.map_cell(database, fx.CELL1_UUID, 'cell1', cell1)
    yield database
    database.dispose()
    cell1.dispose()


def _boot(api, count=1, project_id='p1'):
    items = []
    for _ in range(count):
        inst = fx.instance(project_id=project_id)
        items.append((inst, fx.spec_for(inst, count)))
    boot_records.create_build_requests(fx.ctxt(), items, database=api)
    return [inst for inst, _spec in items]


def test_a_build_request_holds_instance_spec_and_unmapped_mapping(api):
    inst, = _boot(api)
    ctxt = fx.ctxt()
    got = boot_records.get_build_request(ctxt, inst.uuid, database=api)
    assert got.uuid == inst.uuid and got.flavor.vcpus == 1
    assert got.created_at is not None
    spec = boot_records.get_request_spec(ctxt, inst.uuid, database=api)
    assert spec.instance_uuid == inst.uuid and spec.flavor.name == 'small'
    assert boot_records.get_instance_mapping(ctxt, inst.uuid,
                                             database=api) == {
        'instance_uuid': inst.uuid, 'cell_uuid': None, 'project_id': 'p1',
        'user_id': 'u1', 'queued_for_delete': False}


def test_multi_create_is_all_or_nothing(api):
    inst, = _boot(api)
    fresh = fx.instance()
    with pytest.raises(db_exc.DBDuplicateEntry):
        boot_records.create_build_requests(
            fx.ctxt(), [(fresh, fx.spec_for(fresh)),
                        (inst, fx.spec_for(inst))], database=api)
    assert boot_records.get_build_request(fx.ctxt(), fresh.uuid,
                                          database=api) is None


def test_several_build_requests_are_written_by_one_call(api):
    mine = _boot(api, 3)
    ctxt = fx.ctxt()
    uuids = [i.uuid for i in mine]
    for inst in mine:
        got = boot_records.get_build_request(ctxt, inst.uuid, database=api)
        assert got.uuid == inst.uuid and got.display_name == 'vm'
    assert set(boot_records.get_request_specs(
        ctxt, uuids, database=api)) == set(uuids)
    mappings = boot_records.get_instance_mappings(ctxt, uuids, database=api)
    assert sorted(mappings) == sorted(uuids)
    assert {m['cell_uuid'] for m in mappings.values()} == {None}
    assert boot_records.count_build_requests(ctxt, 'p1',
                                             database=api) == (3, 3, 1536)


@pytest.mark.parametrize('chunk', [2, 500])
def test_batch_reads_take_no_one_or_many_uuids(api, monkeypatch, chunk):
    # NOTE: a chunk of 2 splits the five uuids over three IN lists.
    monkeypatch.setattr(db_api, 'IN_CHUNK', chunk)
    mine = _boot(api, 4)
    ctxt = fx.ctxt()
    uuids = [i.uuid for i in mine] + ['missing']
    for wanted in ([], uuids[:1], uuids):
        found = set(wanted) - {'missing'}
        assert set(boot_records.get_build_requests(
            ctxt, wanted, database=api)) == found
        assert set(boot_records.get_request_specs(
            ctxt, wanted, database=api)) == found
        assert set(boot_records.get_instance_mappings(
            ctxt, wanted, database=api)) == found
    for host in ('h1', 'h2', 'h3'):
        boot_records.create_host_mapping(ctxt, host, fx.CELL1_UUID,
                                         database=api)
    for hosts, found in (([], {}), (['h2'], {'h2': fx.CELL1_UUID}),
                         (['h1', 'h2', 'h3', 'x'],
                          dict.fromkeys(['h1', 'h2', 'h3'], fx.CELL1_UUID))):
        assert boot_records.get_host_mappings(ctxt, hosts,
                                              database=api) == found


def test_listing_and_batch_reads(api):
    mine = _boot(api, 2)
    theirs = _boot(api, 1, project_id='p2')
    ctxt = fx.ctxt()
    assert [i.uuid for i in boot_records.list_build_requests(
        ctxt, database=api)] == [i.uuid for i in mine + theirs]
    assert [i.uuid for i in boot_records.list_build_requests(
        ctxt, project_id='p2', database=api)] == [theirs[0].uuid]
    # Quota counting reads the same requests' flavors (small: 1 vCPU).
    expected = (2, sum(i.flavor.vcpus for i in mine),
                sum(i.flavor.memory_mb for i in mine))
    assert boot_records.count_build_requests(
        ctxt, 'p1', database=api) == expected
    assert boot_records.count_build_requests(
        ctxt, 'nobody', database=api) == (0, 0, 0)
    uuids = [i.uuid for i in mine] + ['missing']
    assert set(boot_records.get_build_requests(
        ctxt, uuids, database=api)) == set(uuids[:2])
    assert set(boot_records.get_request_specs(
        ctxt, uuids, database=api)) == set(uuids[:2])
    assert len(boot_records.list_instance_mappings(
        ctxt, project_id='p1', database=api)) == 2


def test_requests_from_before_the_size_columns_are_counted(api):
    mine = _boot(api, 2)
    ctxt = fx.ctxt()

    @api.writer
    def forget_sizes(context, uuid):
        context.session.execute(api_tables.build_requests.update().where(
            api_tables.build_requests.c.instance_uuid == uuid).values(
                vcpus=None, memory_mb=None))

    forget_sizes(ctxt, mine[0].uuid)
    assert boot_records.count_build_requests(ctxt, 'p1', database=api) == (
        2, sum(i.flavor.vcpus for i in mine),
        sum(i.flavor.memory_mb for i in mine))


def test_delete_reports_a_raced_delete(api):
    inst, = _boot(api)
    assert boot_records.delete_build_request(fx.ctxt(), inst.uuid,
                                             database=api)
    assert not boot_records.delete_build_request(fx.ctxt(), inst.uuid,
                                                 database=api)


def test_finish_maps_and_deletes_once(api):
    inst, = _boot(api)
    ctxt = fx.ctxt()
    assert boot_records.finish_build_request(ctxt, inst.uuid, fx.CELL1_UUID,
                                             database=api)
    assert boot_records.get_instance_mapping(
        ctxt, inst.uuid, database=api)['cell_uuid'] == fx.CELL1_UUID
    assert boot_records.get_build_request(ctxt, inst.uuid,
                                          database=api) is None
    # Gone already (a user's delete won the race): nothing changes.
    assert not boot_records.finish_build_request(
        ctxt, inst.uuid, cells.CELL0_UUID, database=api)
    assert boot_records.get_instance_mapping(
        ctxt, inst.uuid, database=api)['cell_uuid'] == fx.CELL1_UUID


def test_finish_into_an_unknown_cell_changes_nothing(api):
    inst, = _boot(api)
    ctxt = fx.ctxt()
    with pytest.raises(cells.CellMappingNotFound):
        boot_records.finish_build_request(
            ctxt, inst.uuid, '00000000-0000-4000-8000-00000000dead',
            database=api)
    assert boot_records.get_instance_mapping(
        ctxt, inst.uuid, database=api)['cell_uuid'] is None
    assert boot_records.get_build_request(ctxt, inst.uuid,
                                          database=api) is not None


def test_request_spec_save_and_missing(api):
    inst, = _boot(api)
    ctxt = fx.ctxt()
    spec = boot_records.get_request_spec(ctxt, inst.uuid, database=api)
    spec.ignore_hosts = ['h1']
    boot_records.save_request_spec(ctxt, inst.uuid, spec, database=api)
    assert boot_records.get_request_spec(
        ctxt, inst.uuid, database=api).ignore_hosts == ['h1']
    with pytest.raises(exception.RequestSpecNotFound):
        boot_records.get_request_spec(ctxt, 'nope', database=api)
    boot_records.save_request_spec(ctxt, 'new', spec, database=api)
    assert boot_records.get_request_spec(ctxt, 'new', database=api)


def test_instance_mapping_cells_and_history(api):
    first, second = _boot(api, 2)
    ctxt = fx.ctxt()
    boot_records.set_instance_mapping_cell(ctxt, first.uuid,
                                           cells.CELL0_UUID, database=api)
    assert boot_records.list_instance_mappings(
        ctxt, cell_uuid=cells.CELL0_UUID, database=api)[0][
            'instance_uuid'] == first.uuid
    with pytest.raises(exception.InstanceMappingNotFound):
        boot_records.set_instance_mapping_cell(ctxt, 'nope',
                                               cells.CELL0_UUID,
                                               database=api)
    with pytest.raises(cells.CellMappingNotFound):
        boot_records.set_instance_mapping_cell(ctxt, second.uuid,
                                               'no-such-cell', database=api)
    assert boot_records.set_queued_for_delete(ctxt, first.uuid,
                                              database=api)
    assert boot_records.get_instance_mapping(
        ctxt, first.uuid, database=api)['queued_for_delete']
    assert boot_records.delete_instance_mapping(ctxt, second.uuid,
                                                database=api)
    assert boot_records.get_instance_mapping(ctxt, second.uuid,
                                             database=api) is None
    boot_records.create_instance_mapping(ctxt, second.uuid, 'p1',
                                         fx.CELL1_UUID, database=api)
    assert boot_records.get_instance_mappings(
        ctxt, [second.uuid], database=api)[second.uuid][
            'cell_uuid'] == fx.CELL1_UUID


def test_host_mappings(api):
    ctxt = fx.ctxt()
    assert boot_records.get_host_mapping(ctxt, 'h1', database=api) is None
    boot_records.create_host_mapping(ctxt, 'h1', fx.CELL1_UUID, database=api)
    boot_records.create_host_mapping(ctxt, 'h0', fx.CELL1_UUID, database=api)
    with pytest.raises(exception.HostMappingExists) as err:
        boot_records.create_host_mapping(ctxt, 'h1', fx.CELL1_UUID,
                                         database=api)
    assert fx.CELL1_UUID in str(err.value)
    assert boot_records.get_host_mapping(ctxt, 'h1',
                                         database=api) == fx.CELL1_UUID
    assert boot_records.get_host_mappings(ctxt, ['h1', 'x'],
                                          database=api) == {
        'h1': fx.CELL1_UUID}
    assert boot_records.list_host_mappings(ctxt, database=api) == [
        ('h0', fx.CELL1_UUID), ('h1', fx.CELL1_UUID)]
    assert boot_records.delete_host_mapping(ctxt, 'h1', database=api)
    assert not boot_records.delete_host_mapping(ctxt, 'h1', database=api)


def test_cells(api):
    found = boot_records.list_cells(fx.ctxt(), database=api)
    assert [c.name for c in found] == ['cell0', 'cell1']
    assert found[0].is_cell0
    assert boot_records.get_cell(fx.ctxt(), fx.CELL1_UUID,
                                 database=api).name == 'cell1'
