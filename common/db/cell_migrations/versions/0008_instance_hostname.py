# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The instance's hostname (compute API 2.90 and 2.94)

instances and shadow_instances gain Nova's hostname column: the name the
guest is given, from the server's name unless the user chose one (2.90;
a fully qualified domain name from 2.94, hence 255 characters).

Revision ID: 2f7c9e1b4a6d
Revises: 8d1f3a5c7e9b
Create Date: 2026-12-02 10:20:00.000000
"""

from alembic import op
import sqlalchemy as sa

revision = '2f7c9e1b4a6d'
down_revision = '8d1f3a5c7e9b'
branch_labels = None
depends_on = None


def upgrade():
    for table in ('instances', 'shadow_instances'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column('hostname', sa.String(length=255),
                                          nullable=True))
