# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Alembic environment of a cell database (cell0, cell1..N).

Run through :func:`common.db.cells.sync_cell`;
see :mod:`common.db.migration_env`.
"""

from common.db import cell_tables
from common.db import migration_env

migration_env.run_migrations_online(cell_tables.metadata)
