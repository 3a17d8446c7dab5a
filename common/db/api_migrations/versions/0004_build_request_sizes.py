# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""build_requests.vcpus and build_requests.memory_mb

The flavor's sizes as columns, so that quota counting sums them in SQL
instead of reading every pending request's instance JSON (twice per
boot). Build requests live for seconds: rows written before the upgrade
keep NULL and are counted from their JSON.

Revision ID: 9b2c4d6e8f10
Revises: f38f94f47de3
Create Date: 2026-11-25 03:20:00.000000
"""

from alembic import op
import sqlalchemy as sa

revision = '9b2c4d6e8f10'
down_revision = 'f38f94f47de3'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('build_requests', schema=None) as batch_op:
        batch_op.add_column(sa.Column('vcpus', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('memory_mb', sa.Integer(),
                                      nullable=True))
