# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage db archive_deleted_rows`` and ``db purge`` on SQLite."""

import argparse
import subprocess
import sys

import pytest
import sqlalchemy as sa

from common.conf import CONF
from common.db import api_tables
from common.db import archive
from common.db import cell_tables as ct
from common.db import cells
from services.manage import db_archive
from tests.unit.db import archive_fixtures as af
from tests.unit.db import records_fixtures as fx

CELL1 = '11111111-1111-1111-1111-111111111111'


class Conf(object):
    def __init__(self, **args):
        self.category = argparse.Namespace(**args)

    def __getattr__(self, name):
        return getattr(CONF, name)


def _archive_args(**args):
    values = dict(max_rows=1000, until_complete=False, before=None,
                  purge=False, all_cells=False, verbose=False)
    values.update(args)
    return Conf(**values)


def _purge_args(**args):
    values = dict(purge_all=False, before=None, all_cells=False,
                  verbose=False)
    values.update(args)
    return Conf(**values)


@pytest.fixture
def env(tmp_path, override, monkeypatch):
    api = fx.api_database(tmp_path)
    cell0 = fx.cell_database(tmp_path, 'cell0')
    cell1 = fx.cell_database(tmp_path, 'cell1')
    fx.map_cell(api, cells.CELL0_UUID, 'cell0', cell0)
    fx.map_cell(api, CELL1, 'cell1', cell1)
    override('connection', cell1.connection, group='database')
    registry = cells.CellDatabases(CONF)
    monkeypatch.setattr(db_archive, '_api', lambda conf: api)
    monkeypatch.setattr(db_archive, '_registry', lambda conf: registry)
    env = argparse.Namespace(api=api, cell0=cell0, cell1=cell1,
                             e_api=api.engine(), e1=cell1.engine(),
                             e0=cell0.engine())
    yield env
    registry.reset()
    for database in (api, cell0, cell1):
        database.dispose()


def _count(engine, table, where=None):
    return af.count(engine, table, where)


def _table(out):
    """The rows of the printed table: {Table: number}."""
    rows = {}
    for line in out.splitlines():
        cells_ = [c.strip() for c in line.strip('|').split('|')]
        if line.startswith('|') and len(cells_) == 2 and cells_[1].isdigit():
            rows[cells_[0]] = int(cells_[1])
    return rows


def _uuids(engine, table, column='uuid'):
    with engine.connect() as conn:
        return set(conn.execute(sa.select(table.c[column])).scalars())


def test_moves_deleted_instances_and_their_rows_only(env, capsys):
    """Deleted instances go with faults, actions, events and api rows."""
    gone = af.add_instances(env.e1, 1, 5, af.OLD, env.e_api, 2)
    live = af.add_instances(env.e1, 100, 3, None, env.e_api, 2)
    af.add_services(env.e1, 1, 2, af.OLD)
    af.add_services(env.e1, 10, 1)

    code = db_archive.archive_deleted_rows(_archive_args(verbose=True))

    assert code == 1
    assert _uuids(env.e1, ct.instances) == set(live)
    assert _uuids(env.e1, ct.shadow_tables['instances']) == set(gone)
    assert _uuids(env.e1, ct.instance_faults, 'instance_uuid') == set(live)
    assert _uuids(env.e1, ct.instance_actions, 'instance_uuid') == set(live)
    assert _count(env.e1, ct.instance_actions_events) == 6
    assert _count(env.e1, ct.shadow_tables['instance_actions_events']) == 10
    assert _count(env.e1, ct.shadow_tables['instance_faults']) == 5
    assert _count(env.e1, ct.services) == 1
    assert _count(env.e1, ct.compute_nodes) == 1
    assert _count(env.e1, ct.shadow_tables['services']) == 2
    assert _count(env.e1, ct.shadow_tables['compute_nodes']) == 2
    assert _uuids(env.e_api, api_tables.instance_mappings,
                  'instance_uuid') == set(live)
    assert _uuids(env.e_api, api_tables.request_specs,
                  'instance_uuid') == set(live)
    out = capsys.readouterr().out
    assert 'Number of Rows Archived' in out
    assert _table(out) == {
        'API_DB.instance_mappings': 5, 'API_DB.request_specs': 5,
        'instances': 5, 'instance_faults': 5, 'instance_actions': 5,
        'instance_actions_events': 10, 'services': 2, 'compute_nodes': 2}
    # NOTE: the shadow copies of an instance's rows carry its deletion
    # time, which purge --before goes by.
    with env.e1.connect() as conn:
        stamps = set(conn.execute(sa.select(
            ct.shadow_tables['instance_actions_events'].c.deleted_at)
        ).scalars())
    assert stamps == {af.OLD}
    # NOTE: a second run finds nothing: exit 0.
    assert db_archive.archive_deleted_rows(_archive_args(verbose=True)) == 0
    assert 'Nothing was archived.' in capsys.readouterr().out


def test_live_rows_untouched(env):
    """Live instances keep every row, column for column."""
    af.add_instances(env.e1, 1, 4, None, env.e_api, 2)
    af.add_instances(env.e1, 10, 4, af.OLD)
    with env.e1.connect() as conn:
        before = [conn.execute(sa.select(t).order_by(t.c.id)).all()
                  for t in (ct.instances, ct.instance_faults,
                            ct.instance_actions, ct.instance_actions_events)]
    assert db_archive.archive_deleted_rows(
        _archive_args(until_complete=True)) == 1
    with env.e1.connect() as conn:
        after = [conn.execute(sa.select(t).order_by(t.c.id)).all()
                 for t in (ct.instances, ct.instance_faults,
                           ct.instance_actions, ct.instance_actions_events)]
    assert [len(rows) for rows in before] == [8, 8, 8, 16]
    assert [len(rows) for rows in after] == [4, 4, 4, 8]
    assert all(r.id < 10 for r in after[0])
    assert after[0] == [r for r in before[0] if r.id < 10]
    assert after[3] == [r for r in before[3] if r.action_id < 10]
    assert _count(env.e_api, api_tables.instance_mappings) == 4


def test_before_only_archives_older_deletions(env):
    old = af.add_instances(env.e1, 1, 3, af.OLD)
    recent = af.add_instances(env.e1, 10, 2, af.RECENT)

    code = db_archive.archive_deleted_rows(
        _archive_args(before='2021-06-01', until_complete=True))

    assert code == 1
    assert _uuids(env.e1, ct.instances) == set(recent)
    assert _uuids(env.e1, ct.shadow_tables['instances']) == set(old)


def test_bad_before_and_max_rows_change_nothing(env, capsys):
    af.add_instances(env.e1, 1, 2, af.OLD)
    assert db_archive.archive_deleted_rows(
        _archive_args(before='not a date at all')) == 4
    assert 'Invalid value for --before' in capsys.readouterr().out
    assert db_archive.archive_deleted_rows(_archive_args(max_rows=0)) == 2
    assert 'Must supply a positive value for max_rows' in (
        capsys.readouterr().out)
    assert db_archive.archive_deleted_rows(
        _archive_args(max_rows=2 ** 31)) == 2
    assert _count(env.e1, ct.instances) == 2


def test_api_database_unreachable_is_3(env, monkeypatch, capsys):
    from common import exception

    def missing(conf):
        raise exception.DBNotConfigured(name='api')
    monkeypatch.setattr(db_archive, '_api', missing)
    af.add_instances(env.e1, 1, 2, af.OLD)
    assert db_archive.archive_deleted_rows(_archive_args()) == 3
    assert 'Failed to connect to API DB' in capsys.readouterr().out
    assert _count(env.e1, ct.instances) == 2


def test_max_rows_batches_and_until_complete_progress(env, capsys):
    af.add_instances(env.e1, 1, 25, af.OLD)

    assert db_archive.archive_deleted_rows(_archive_args(max_rows=10)) == 1
    assert _count(env.e1, ct.instances) == 15
    # NOTE: the oldest (lowest ids) went first.
    with env.e1.connect() as conn:
        assert min(conn.execute(sa.select(ct.instances.c.id)).scalars()) == 11

    assert db_archive.archive_deleted_rows(_archive_args(
        max_rows=10, until_complete=True, verbose=True)) == 1
    out = capsys.readouterr().out
    assert _count(env.e1, ct.instances) == 0
    progress = [line for line in out.splitlines()
                if line.startswith('Archiving: ')]
    assert progress[0].startswith('Archiving: 50 rows so far (')
    assert 'instances: 10' in progress[0]
    assert progress[-1].startswith('Archiving: 75 rows so far (')
    assert 'instance_actions_events: 30' in progress[-1]


def test_interrupted_batch_rolls_back_and_rerun_finishes(env, monkeypatch):
    uuids = af.add_instances(env.e1, 1, 6, af.OLD, env.e_api, 2)
    real_move = archive._move
    calls = []

    def failing(conn, table, ids, parent=None):
        calls.append(table.name)
        # NOTE: the second batch's instances, whatever rows go with them.
        if calls.count('instances') == 2 and table.name == 'instances':
            raise KeyboardInterrupt()
        return real_move(conn, table, ids, parent)
    monkeypatch.setattr(archive, '_move', failing)
    # NOTE: the second batch is interrupted at its last statement: its
    # events, actions and faults are rolled back with it.
    code = db_archive.archive_deleted_rows(
        _archive_args(max_rows=3, until_complete=True))
    assert code == 1
    assert _count(env.e1, ct.instances) == 3
    assert _count(env.e1, ct.instance_faults) == 3
    assert _count(env.e1, ct.instance_actions_events) == 6
    assert _count(env.e1, ct.shadow_tables['instances']) == 3
    assert _count(env.e1, ct.shadow_tables['instance_faults']) == 3

    monkeypatch.setattr(archive, '_move', real_move)
    assert db_archive.archive_deleted_rows(
        _archive_args(until_complete=True)) == 1
    assert _count(env.e1, ct.instances) == 0
    assert _uuids(env.e1, ct.shadow_tables['instances']) == set(uuids)
    assert _count(env.e1, ct.shadow_tables['instance_actions_events']) == 12
    assert _count(env.e_api, api_tables.instance_mappings) == 0


def test_all_cells_prefixes_cell_names(env, capsys):
    af.add_instances(env.e0, 1, 2, af.OLD)
    af.add_instances(env.e1, 1, 3, af.OLD)
    assert db_archive.archive_deleted_rows(
        _archive_args(all_cells=True, verbose=True)) == 1
    out = capsys.readouterr().out
    table = _table(out)
    assert table['cell0.instances'] == 2
    assert table['cell1.instances'] == 3
    assert table['cell1.instance_actions_events'] == 6
    assert _count(env.e0, ct.instances) == 0


def test_archive_then_purge_option(env):
    af.add_instances(env.e1, 1, 3, af.OLD)
    assert db_archive.archive_deleted_rows(_archive_args(purge=True)) == 1
    for shadow in ct.shadow_tables.values():
        assert _count(env.e1, shadow) == 0
    assert _count(env.e1, ct.instances) == 0


def test_purge_before_all_and_exit_codes(env, capsys):
    af.add_instances(env.e1, 1, 2, af.OLD)
    af.add_instances(env.e1, 10, 3, af.RECENT)
    db_archive.archive_deleted_rows(_archive_args())
    shadow = ct.shadow_tables['instances']
    events = ct.shadow_tables['instance_actions_events']

    assert db_archive.purge(_purge_args()) == 1
    assert 'Must supply --before or --all' in capsys.readouterr().out
    assert db_archive.purge(_purge_args(before='garbage')) == 2
    assert db_archive.purge(
        _purge_args(before='2021-01-01', verbose=True)) == 0
    out = capsys.readouterr().out
    assert 'Deleted 2 rows from shadow_instances' in out
    assert 'Deleted 4 rows from shadow_instance_actions_events' in out
    assert _count(env.e1, shadow) == 3
    assert _count(env.e1, events) == 6
    assert db_archive.purge(_purge_args(before='2021-01-01')) == 3
    assert db_archive.purge(_purge_args(purge_all=True, all_cells=True)) == 0
    assert _count(env.e1, shadow) == 0
    assert _count(env.e1, events) == 0
    assert db_archive.purge(_purge_args(purge_all=True)) == 3


def test_purge_deletes_in_id_ranges(env, monkeypatch):
    """A purge larger than one range deletes every matching row."""
    monkeypatch.setattr(archive, 'PURGE_RANGE', 7)
    af.add_instances(env.e1, 1, 30, af.OLD)
    db_archive.archive_deleted_rows(_archive_args(until_complete=True))
    counts = archive.purge(env.cell1, None)
    assert counts['shadow_instances'] == 30
    assert counts['shadow_instance_actions_events'] == 60


def test_parse_before_is_naive_utc():
    assert db_archive.parse_before('2020-01-02T03:00:00+02:00') == (
        af.OLD.replace(day=2, hour=1))
    assert db_archive.parse_before('Jan 2 2020') == af.OLD.replace(day=2)


def test_cli_wiring(tmp_path):
    """berth-manage db archive_deleted_rows/purge parse their options."""
    conf = tmp_path / 'berth.conf'
    conf.write_text('[DEFAULT]\n')

    def manage(*args):
        # NOTE: its own process: berth-manage parses the global CONF.
        return subprocess.run(
            [sys.executable, '-m', 'services.manage.main',
             '--config-file', str(conf), 'db'] + list(args),
            capture_output=True, text=True, timeout=120)
    result = manage('purge')
    assert result.returncode == 1, result.stderr
    assert 'Must supply --before or --all' in result.stdout
    result = manage('archive_deleted_rows', '--max_rows', '5',
                    '--until-complete', '--before', '2020-01-01')
    assert result.returncode == 3, result.stderr
    assert 'Failed to connect to API DB' in result.stdout
