# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The body of every Berth alembic environment (placement, api, cell).

Each database's ``env.py`` only names its metadata; the caller (a
``sync`` function) hands over an open connection in
``config.attributes['connection']``, so there is no alembic.ini to edit.
"""

from alembic import context


def run_migrations_online(metadata):
    """Run the migrations on the connection the caller opened.

    :param metadata: the database's SQLAlchemy MetaData, for autogenerate.
    """
    connection = context.config.attributes['connection']
    context.configure(connection=connection, target_metadata=metadata,
                      render_as_batch=connection.dialect.name == 'sqlite')
    with context.begin_transaction():
        context.run_migrations()
