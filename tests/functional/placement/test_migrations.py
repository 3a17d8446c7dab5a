# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The placement migrations on MariaDB and PostgreSQL.

The unit guard compares the migrated schema with ``tables.py`` on SQLite;
types, defaults and constraints differ per dialect, so the same comparison
runs here on each real backend, through ``berth-manage`` as operators do.
"""

import subprocess
import sys

from alembic import autogenerate
from alembic import migration as alembic_migration
import sqlalchemy as sa

from services.placement.db import tables


def _manage(conf_file, *args):
    return subprocess.run(
        [sys.executable, '-m', 'services.manage.main',
         '--config-file', str(conf_file)] + list(args),
        capture_output=True, text=True, timeout=300)


def test_db_sync_matches_tables(real_backend, make_database, tmp_path):
    """db sync twice, then the schema equals tables.metadata."""
    url = make_database(real_backend)
    conf_file = tmp_path / 'berth.conf'
    conf_file.write_text('[placement_database]\nconnection = %s\n' % url)
    for _ in range(2):
        result = _manage(conf_file, 'placement', 'db', 'sync')
        assert result.returncode == 0, result.stderr

    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            context = alembic_migration.MigrationContext.configure(
                connection, opts={'compare_type': True})
            diff = autogenerate.compare_metadata(context, tables.metadata)
    finally:
        engine.dispose()
    assert diff == [], '%s schema differs from tables.py:\n%s' % (
        real_backend, '\n'.join(str(d) for d in diff))
