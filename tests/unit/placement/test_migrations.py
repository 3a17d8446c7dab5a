# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Guard tests: the migrations build exactly the schema tables.py declares.

``tables.py`` is what the code queries; the alembic scripts are what an
operator's database gets. These tests fail when the two drift apart, and
when ``berth-manage placement db sync`` stops being safe to run twice.
"""

import os
import subprocess
import sys

from alembic import autogenerate
from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
import os_resource_classes
import pytest
import sqlalchemy as sa

from services.placement.db import api as db_api
from services.placement.db import tables

MIGRATIONS = os.path.join(os.path.dirname(db_api.__file__), 'migrations')


def _alembic_config(connection=None):
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location', MIGRATIONS)
    cfg.attributes['connection'] = connection
    return cfg


def _head():
    return alembic_script.ScriptDirectory.from_config(
        _alembic_config()).get_current_head()


@pytest.fixture
def sqlite_url(tmp_path):
    """A fresh, empty SQLite database file."""
    return 'sqlite:///%s' % (tmp_path / 'placement.sqlite')


def test_one_head():
    """The migration history is linear: exactly one head."""
    heads = alembic_script.ScriptDirectory.from_config(
        _alembic_config()).get_heads()
    assert len(heads) == 1, heads


def test_upgrade_head_matches_tables(sqlite_url):
    """alembic upgrade head yields the schema of tables.metadata."""
    # NOTE: a private engine, not placement_db: that one is configured
    # once per process and may already point at the gabbi database.
    engine = sa.create_engine(sqlite_url)
    try:
        with engine.begin() as connection:
            alembic_command.upgrade(_alembic_config(connection), 'head')
        with engine.connect() as connection:
            context = alembic_migration.MigrationContext.configure(
                connection, opts={'compare_type': True,
                                  'compare_server_default': True})
            assert context.get_current_revision() == _head()
            diff = autogenerate.compare_metadata(context, tables.metadata)
    finally:
        engine.dispose()
    assert diff == [], 'migrations and tables.py differ:\n%s' % '\n'.join(
        str(d) for d in diff)


def _manage(conf_file, *args):
    """Run berth-manage in its own process (it parses the global CONF)."""
    return subprocess.run(
        [sys.executable, '-m', 'services.manage.main',
         '--config-file', str(conf_file)] + list(args),
        capture_output=True, text=True, timeout=120)


def test_db_sync_is_idempotent(tmp_path, sqlite_url):
    """Two syncs succeed, reach head and load each standard class once."""
    conf_file = tmp_path / 'berth.conf'
    conf_file.write_text('[placement_database]\nconnection = %s\n'
                         % sqlite_url)

    result = _manage(conf_file, 'placement', 'db', 'version')
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'None'

    for _ in range(2):
        result = _manage(conf_file, 'placement', 'db', 'sync')
        assert result.returncode == 0, result.stderr

    result = _manage(conf_file, 'placement', 'db', 'version')
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == _head()

    engine = sa.create_engine(sqlite_url)
    try:
        with engine.connect() as connection:
            names = connection.execute(
                sa.select(tables.resource_classes.c.name)).scalars().all()
            traits = connection.execute(
                sa.select(sa.func.count()).select_from(tables.traits)
            ).scalar()
    finally:
        engine.dispose()
    assert sorted(names) == sorted(os_resource_classes.STANDARDS)
    assert traits > 0


def test_manage_without_connection_fails_cleanly(tmp_path):
    """No [placement_database] connection: exit 1 with a message."""
    conf_file = tmp_path / 'berth.conf'
    conf_file.write_text('[DEFAULT]\n')
    result = _manage(conf_file, 'placement', 'db', 'sync')
    assert result.returncode == 1
    assert 'placement' in result.stderr
    assert 'Traceback' not in result.stderr


def test_manage_bad_command_line(tmp_path):
    """An unknown command or a missing config file: exit 2."""
    conf_file = tmp_path / 'berth.conf'
    conf_file.write_text('[DEFAULT]\n')
    assert _manage(conf_file, 'placement', 'db', 'nonsense').returncode == 2
    result = _manage(tmp_path / 'missing.conf', 'placement', 'db', 'version')
    assert result.returncode == 2
    assert 'missing.conf' in result.stderr
