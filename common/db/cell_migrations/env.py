# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Alembic environment of a cell database (cell0, cell1..N).

Run through :func:`common.db.cells.sync_cell`, which hands over an open
connection in ``config.attributes['connection']``; there is no alembic.ini
to edit.
"""

from alembic import context

from common.db import cell_tables

config = context.config


def run_migrations_online():
    """Run the migrations on the connection the caller opened."""
    connection = config.attributes['connection']
    context.configure(connection=connection,
                      target_metadata=cell_tables.metadata,
                      render_as_batch=connection.dialect.name == 'sqlite')
    with context.begin_transaction():
        context.run_migrations()


run_migrations_online()
