# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""instances.vcpus and instances.memory_mb

The flavor's sizes as columns, for quota usage summed in SQL. Existing
rows are filled in from their flavor.

Revision ID: 5d7e8f9a0b1c
Revises: 66fe3ad31034
Create Date: 2026-11-24 22:20:00.000000
"""

import json

from alembic import op
import sqlalchemy as sa

revision = '5d7e8f9a0b1c'
down_revision = '66fe3ad31034'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('instances', schema=None) as batch_op:
        batch_op.add_column(sa.Column('vcpus', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('memory_mb', sa.Integer(),
                                      nullable=True))
    instances = sa.table('instances', sa.column('id', sa.Integer),
                         sa.column('flavor', sa.Text),
                         sa.column('vcpus', sa.Integer),
                         sa.column('memory_mb', sa.Integer))
    conn = op.get_bind()
    rows = conn.execute(sa.select(instances.c.id, instances.c.flavor)).all()
    for row_id, text in rows:
        try:
            flavor = json.loads(text) if text else {}
        except ValueError:
            flavor = {}
        if not isinstance(flavor, dict):
            flavor = {}
        conn.execute(instances.update().where(instances.c.id == row_id)
                     .values(vcpus=int(flavor.get('vcpus') or 0),
                             memory_mb=int(flavor.get('memory_mb') or 0)))
