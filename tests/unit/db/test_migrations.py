# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Guard tests: the api and cell migrations build exactly their tables.

``api_tables.py`` and ``cell_tables.py`` are what the code queries; the
alembic scripts are what an operator's databases get. These tests fail when
the two drift apart, and when ``berth-manage api_db sync`` / ``db sync``
stop being safe to run twice or stop finding the mapped cells.
"""

import subprocess
import sys

from alembic import autogenerate
from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
import pytest
import sqlalchemy as sa

from common.db import api_tables
from common.db import cell_tables
from common.db import cells

SCHEMAS = {
    'api': (cells.API_MIGRATIONS, api_tables.metadata),
    'cell': (cells.CELL_MIGRATIONS, cell_tables.metadata),
}


def _alembic_config(migrations, connection=None):
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location', migrations)
    cfg.attributes['connection'] = connection
    return cfg


def _head(kind):
    return alembic_script.ScriptDirectory.from_config(
        _alembic_config(SCHEMAS[kind][0])).get_current_head()


def _revision(url):
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            return alembic_migration.MigrationContext.configure(
                connection).get_current_revision()
    finally:
        engine.dispose()


@pytest.mark.parametrize('kind', sorted(SCHEMAS))
def test_one_head(kind):
    """Each migration history is linear: exactly one head."""
    heads = alembic_script.ScriptDirectory.from_config(
        _alembic_config(SCHEMAS[kind][0])).get_heads()
    assert len(heads) == 1, heads


@pytest.mark.parametrize('kind', sorted(SCHEMAS))
def test_upgrade_head_matches_tables(kind, tmp_path):
    """alembic upgrade head yields the schema of the tables module."""
    migrations, metadata = SCHEMAS[kind]
    # NOTE: a private engine, not the process-wide Databases, which are
    # configured once per process.
    engine = sa.create_engine('sqlite:///%s' % (tmp_path / 'db.sqlite'))
    try:
        with engine.begin() as connection:
            alembic_command.upgrade(_alembic_config(migrations, connection),
                                    'head')
        with engine.connect() as connection:
            context = alembic_migration.MigrationContext.configure(
                connection, opts={'compare_type': True,
                                  'compare_server_default': True})
            assert context.get_current_revision() == _head(kind)
            diff = autogenerate.compare_metadata(context, metadata)
    finally:
        engine.dispose()
    assert diff == [], 'migrations and %s tables differ:\n%s' % (
        kind, '\n'.join(str(d) for d in diff))


def test_scheduler_indexes_exist():
    """The lookups the scheduler makes on every refresh are indexed."""
    def indexed(table):
        found = {tuple(c.name for c in i.columns) for i in table.indexes}
        found |= {tuple(c.name for c in u.columns)
                  for u in table.constraints
                  if isinstance(u, sa.UniqueConstraint)}
        return found

    assert ('uuid',) in indexed(cell_tables.compute_nodes)
    assert ('updated_at',) in indexed(cell_tables.compute_nodes)
    assert ('host', 'deleted') in indexed(cell_tables.instances)
    assert ('host', 'binary', 'deleted') in indexed(cell_tables.services)
    assert ('host', 'aggregate_id') in indexed(api_tables.aggregate_hosts)


def _manage(conf_file, *args):
    """Run berth-manage in its own process (it parses the global CONF)."""
    return subprocess.run(
        [sys.executable, '-m', 'services.manage.main',
         '--config-file', str(conf_file)] + list(args),
        capture_output=True, text=True, timeout=120)


def _write_conf(path, api_url=None, cell_url=None):
    text = ''
    if api_url:
        text += '[api_database]\nconnection = %s\n' % api_url
    if cell_url:
        text += '[database]\nconnection = %s\n' % cell_url
    path.write_text(text or '[DEFAULT]\n')
    return path


def test_api_db_and_db_sync_are_idempotent(tmp_path):
    """Two syncs of each succeed and reach head; versions say so."""
    api_url = 'sqlite:///%s' % (tmp_path / 'api.sqlite')
    cell_url = 'sqlite:///%s' % (tmp_path / 'cell1.sqlite')
    conf_file = _write_conf(tmp_path / 'berth.conf', api_url, cell_url)

    for family in ('api_db', 'db'):
        result = _manage(conf_file, family, 'version')
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == 'None'

    for family in ('api_db', 'db', 'api_db', 'db'):
        result = _manage(conf_file, family, 'sync')
        assert result.returncode == 0, result.stderr

    assert _manage(conf_file, 'api_db', 'version').stdout.strip() == (
        _head('api'))
    assert _manage(conf_file, 'db', 'version').stdout.strip() == (
        _head('cell'))
    assert _revision(api_url) == _head('api')
    assert _revision(cell_url) == _head('cell')


def test_db_sync_follows_cell_mappings(tmp_path):
    """db sync upgrades cell0 and every mapped cell, disabled ones too."""
    api_url = 'sqlite:///%s' % (tmp_path / 'api.sqlite')
    urls = {name: 'sqlite:///%s' % (tmp_path / ('%s.sqlite' % name))
            for name in ('cell0', 'cell1', 'cell2')}
    conf_file = _write_conf(tmp_path / 'berth.conf', api_url, urls['cell1'])
    assert _manage(conf_file, 'api_db', 'sync').returncode == 0

    engine = sa.create_engine(api_url)
    try:
        with engine.begin() as connection:
            connection.execute(api_tables.cell_mappings.insert(), [
                dict(uuid=cells.CELL0_UUID, name='cell0',
                     transport_url='none:///',
                     database_connection=urls['cell0'], disabled=False),
                dict(uuid='4473067d-4c91-459f-93ae-79cb1e1203c7',
                     name='cell1', transport_url='rabbit://',
                     database_connection=urls['cell1'], disabled=False),
                dict(uuid='432015b0-14e9-4e81-96eb-2ec36d79773b',
                     name='cell2', transport_url='rabbit://',
                     database_connection=urls['cell2'], disabled=True),
            ])
    finally:
        engine.dispose()

    for _ in range(2):
        result = _manage(conf_file, 'db', 'sync')
        assert result.returncode == 0, result.stderr
    for url in urls.values():
        assert _revision(url) == _head('cell')


def test_manage_without_connection_fails_cleanly(tmp_path):
    """No connection configured: exit 1 with a message, no traceback."""
    conf_file = _write_conf(tmp_path / 'berth.conf')
    for family in ('api_db', 'db'):
        result = _manage(conf_file, family, 'sync')
        assert result.returncode == 1, result.stderr
        assert 'database' in result.stderr
        assert 'Traceback' not in result.stderr


def test_manage_bad_command_line(tmp_path):
    """An unknown or missing command: exit 2."""
    conf_file = _write_conf(tmp_path / 'berth.conf')
    assert _manage(conf_file, 'db', 'nonsense').returncode == 2
    assert _manage(conf_file, 'api_db').returncode == 2


def test_instance_sizes_are_filled_in_from_flavors(tmp_path):
    """Cell migration 0003 copies each flavor's vCPUs and RAM to columns."""
    migrations = cells.CELL_MIGRATIONS
    engine = sa.create_engine('sqlite:///%s' % (tmp_path / 'cell.sqlite'))
    try:
        with engine.begin() as connection:
            alembic_command.upgrade(
                _alembic_config(migrations, connection), '66fe3ad31034')
            connection.execute(sa.text(
                "INSERT INTO instances (uuid, project_id, flavor, deleted) "
                "VALUES ('i1', 'p1', :flavor, 0), ('i2', 'p1', NULL, 0)"),
                {'flavor': '{"vcpus": 4, "memory_mb": 2048}'})
        with engine.begin() as connection:
            alembic_command.upgrade(
                _alembic_config(migrations, connection), 'head')
            rows = connection.execute(sa.text(
                'SELECT uuid, vcpus, memory_mb FROM instances ORDER BY uuid'
            )).all()
    finally:
        engine.dispose()
    assert [tuple(r) for r in rows] == [('i1', 4, 2048), ('i2', 0, 0)]
