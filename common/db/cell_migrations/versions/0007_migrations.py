# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server moves: the migrations table and the instance's migration context

migrations holds every resize, cold and live migration and evacuation
(Nova's columns, the flavors as JSON copies); shadow_migrations is its
archive. instances and shadow_instances gain migration_context (JSON).

Revision ID: 8d1f3a5c7e9b
Revises: 6c2e4a8b1d3f
Create Date: 2026-11-28 09:40:00.000000
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '8d1f3a5c7e9b'
down_revision = '6c2e4a8b1d3f'
branch_labels = None
depends_on = None


def _json():
    return sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql')


def _datetime():
    return sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def _columns(shadow):
    return [
        sa.Column('id', sa.Integer(), autoincrement=not shadow,
                  nullable=False),
        sa.Column('uuid', sa.String(length=36), nullable=False),
        sa.Column('instance_uuid', sa.String(length=36), nullable=False),
        sa.Column('migration_type', sa.String(length=255), nullable=True),
        sa.Column('status', sa.String(length=255), nullable=True),
        sa.Column('source_compute', sa.String(length=255), nullable=True),
        sa.Column('source_node', sa.String(length=255), nullable=True),
        sa.Column('dest_compute', sa.String(length=255), nullable=True),
        sa.Column('dest_node', sa.String(length=255), nullable=True),
        sa.Column('dest_host', sa.String(length=255), nullable=True),
        sa.Column('old_flavor', _json(), nullable=True),
        sa.Column('new_flavor', _json(), nullable=True),
        sa.Column('project_id', sa.String(length=255), nullable=True),
        sa.Column('user_id', sa.String(length=255), nullable=True),
        sa.Column('hidden', sa.Boolean(), nullable=False),
        sa.Column('cross_cell_move', sa.Boolean(), nullable=False),
        sa.Column('memory_total', sa.BigInteger(), nullable=True),
        sa.Column('memory_processed', sa.BigInteger(), nullable=True),
        sa.Column('memory_remaining', sa.BigInteger(), nullable=True),
        sa.Column('disk_total', sa.BigInteger(), nullable=True),
        sa.Column('disk_processed', sa.BigInteger(), nullable=True),
        sa.Column('disk_remaining', sa.BigInteger(), nullable=True),
        sa.Column('created_at', _datetime(), nullable=True),
        sa.Column('updated_at', _datetime(), nullable=True),
        sa.Column('deleted_at', _datetime(), nullable=True),
        sa.Column('deleted', sa.Integer(), nullable=False),
    ]


def upgrade():
    op.create_table('migrations', *_columns(shadow=False),
                    sa.PrimaryKeyConstraint('id'))
    op.create_index('migrations_uuid_idx', 'migrations', ['uuid'],
                    unique=True)
    op.create_index('migrations_instance_uuid_and_status_idx', 'migrations',
                    ['deleted', 'instance_uuid', 'status'])
    op.create_index('migrations_source_compute_status_idx', 'migrations',
                    ['source_compute', 'status'])
    op.create_index('migrations_dest_compute_status_idx', 'migrations',
                    ['dest_compute', 'status'])
    op.create_index('migrations_updated_at_idx', 'migrations',
                    ['updated_at'])
    op.create_table('shadow_migrations', *_columns(shadow=True))
    op.create_index('shadow_migrations_id_idx', 'shadow_migrations', ['id'])
    for table in ('instances', 'shadow_instances'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column('migration_context', _json(),
                                          nullable=True))
