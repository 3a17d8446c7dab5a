# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""db online_data_migrations and placement db stamp / migrations."""

import os
import subprocess
import sys

import pytest
import sqlalchemy as sa

from common.db import api_tables
from common.db import boot_records
from common.db import cell_tables
from common.db import instance_records
from services.manage import data_migrations
from tests.unit.db import records_fixtures as fx


@pytest.fixture
def migrations(world, monkeypatch):
    monkeypatch.setattr(data_migrations, '_api', lambda conf: world.api)
    monkeypatch.setattr(data_migrations, '_cell_databases',
                        lambda conf: [world.cell0, world.cell1])

    def run(max_count=None):
        return data_migrations.run(None, data_migrations.DB_MIGRATIONS,
                                   max_count)
    return run


def _unsize(database, table):
    database.writer(lambda ctx: ctx.session.execute(
        table.update().values(vcpus=None, memory_mb=None)))(fx.ctxt())


def _sizes(database, table):
    query = sa.select(table.c.vcpus, table.c.memory_mb).order_by(table.c.id)
    return [tuple(row) for row in database.reader(
        lambda ctx: ctx.session.execute(query).all())(fx.ctxt())]


def _old_rows(world, instances=3, requests=2):
    for _ in range(instances):
        instance_records.create_instance(fx.ctxt(), world.cell1,
                                         fx.instance())
    items = []
    for _ in range(requests):
        inst = fx.instance()
        items.append((inst, fx.spec_for(inst)))
    boot_records.create_build_requests(fx.ctxt(), items, database=world.api)
    _unsize(world.cell1, cell_tables.instances)
    _unsize(world.api, api_tables.build_requests)


def test_nothing_to_do_says_so(migrations, capsys):
    assert migrations() == 0
    out = capsys.readouterr().out
    assert out.startswith('Running batches of 50 until complete\n')
    rows = [line.split('|')[1:4] for line in out.splitlines()
            if 'populate_' in line]
    assert [[c.strip() for c in row] for row in rows] == [
        ['populate_build_request_sizes', '0', '0'],
        ['populate_instance_sizes', '0', '0']]
    assert out.rstrip().endswith(
        'Nothing to do: no rows need an online data migration.')
    assert migrations(max_count=10) == 0


def test_until_complete_fills_every_row(migrations, world, capsys):
    _old_rows(world)
    flavor = fx.instance().flavor
    assert migrations() == 0
    out = capsys.readouterr().out
    assert '3 rows matched query populate_instance_sizes, 3 migrated' in out
    assert ('2 rows matched query populate_build_request_sizes, '
            '2 migrated') in out
    assert set(_sizes(world.cell1, cell_tables.instances)) == {
        (flavor.vcpus, flavor.memory_mb)}
    assert set(_sizes(world.api, api_tables.build_requests)) == {
        (flavor.vcpus, flavor.memory_mb)}
    assert 'Nothing to do' not in out


def test_max_count_exits_1_until_done(migrations, world, capsys):
    _old_rows(world, instances=3, requests=1)
    assert migrations(max_count=2) == 1
    assert [r for r in _sizes(world.cell1, cell_tables.instances)
            if r[0] is None] == [(None, None)]
    assert migrations(max_count=2) == 1
    assert migrations(max_count=2) == 0
    assert migrations(max_count=0) == 127
    assert capsys.readouterr().out.splitlines()[-1] == \
        'Must supply a positive value for max_number'


def test_a_failing_migration_is_exit_2(migrations, monkeypatch, capsys):
    def broken(conf, count):
        raise RuntimeError('boom')
    broken.__name__ = 'populate_broken'
    assert data_migrations.run(None, (broken,), None) == 2
    out = capsys.readouterr().out
    assert 'Error attempting to run populate_broken' in out
    assert 'Some migrations failed unexpectedly' in out


def test_placement_has_none(capsys):
    assert data_migrations.run(None, data_migrations.PLACEMENT_MIGRATIONS,
                               None) == 0
    assert capsys.readouterr().out.rstrip().endswith(
        'Nothing to do: there are no online data migrations.')


def test_placement_db_stamp_end_to_end(tmp_path):
    conf = tmp_path / 'berth.conf'
    conf.write_text('[placement_database]\nconnection = sqlite:///%s/'
                    'placement.sqlite\n' % tmp_path)

    def run(*args):
        result = subprocess.run(
            [sys.executable, '-m', 'services.manage.main', '--config-file',
             str(conf), 'placement', 'db'] + list(args),
            capture_output=True, text=True, timeout=120,
            cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                os.path.dirname(__file__)))))
        return result.returncode, result.stdout.strip()
    assert run('stamp', 'head') == (0, '')
    code, head = run('version')
    assert code == 0 and head not in ('', 'None')
    assert run('stamp', 'b0a1d2c3e4f5') == (0, '')
    assert run('version') == (0, 'b0a1d2c3e4f5')
    assert run('stamp', 'head') == (0, '')
    code, out = run('stamp', 'no-such-revision')
    assert code == 1
    assert out.startswith('Cannot stamp the placement database with '
                          'no-such-revision')
    assert run('version') == (0, head)
    code, out = run('online_data_migrations')
    assert code == 0 and out.endswith('there are no online data migrations.')
