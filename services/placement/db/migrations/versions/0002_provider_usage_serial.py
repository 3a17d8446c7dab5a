# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Add resource_providers.usage_serial

The allocation candidates' provider cache checks each provider's
generation and usage_serial against its copy; deleting allocations moves
usage_serial on.

Revision ID: c1d2e3f4a5b6
Revises: b0a1d2c3e4f5
Create Date: 2026-11-24 21:40:00.000000
"""

from alembic import op
import sqlalchemy as sa


revision = 'c1d2e3f4a5b6'
down_revision = 'b0a1d2c3e4f5'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('resource_providers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('usage_serial', sa.Integer(),
                                      nullable=False, server_default='0'))
