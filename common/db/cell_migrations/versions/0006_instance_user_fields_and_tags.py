# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""What users set on a server after boot, and server tags

instances gain Nova's lock columns (locked, locked_by), the key pair
copied at boot (key_name, key_data), the 2.19 description
(display_description), the access addresses (access_ip_v4/v6) and the
system metadata (JSON); shadow_instances gains the same columns. The
tags table holds 2.26 server tags; it has no shadow copy, since an
instance's tags are removed with it.

Revision ID: 6c2e4a8b1d3f
Revises: 3b9c0d1e2f4a
Create Date: 2026-11-28 03:40:00.000000
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '6c2e4a8b1d3f'
down_revision = '3b9c0d1e2f4a'
branch_labels = None
depends_on = None


def _columns(locked_nullable):
    return [
        sa.Column('locked', sa.Boolean(), nullable=locked_nullable,
                  server_default=None if locked_nullable else sa.false()),
        sa.Column('locked_by', sa.String(length=255), nullable=True),
        sa.Column('key_name', sa.String(length=255), nullable=True),
        sa.Column('key_data', sa.Text(), nullable=True),
        sa.Column('display_description', sa.Text(), nullable=True),
        sa.Column('access_ip_v4', sa.String(length=39), nullable=True),
        sa.Column('access_ip_v6', sa.String(length=39), nullable=True),
        sa.Column('system_metadata',
                  sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql'),
                  nullable=True),
    ]


def upgrade():
    # NOTE: the server default fills the rows that exist; the tables
    # module has none (new rows get False from the code), so it is dropped
    # again once the rows are filled.
    with op.batch_alter_table('instances', schema=None) as batch_op:
        for column in _columns(locked_nullable=False):
            batch_op.add_column(column)
    with op.batch_alter_table('instances', schema=None) as batch_op:
        batch_op.alter_column('locked', server_default=None,
                              existing_type=sa.Boolean(),
                              existing_nullable=False)
    with op.batch_alter_table('shadow_instances', schema=None) as batch_op:
        for column in _columns(locked_nullable=False):
            batch_op.add_column(column)
    with op.batch_alter_table('shadow_instances', schema=None) as batch_op:
        batch_op.alter_column('locked', server_default=None,
                              existing_type=sa.Boolean(),
                              existing_nullable=False)
    op.create_table(
        'tags',
        sa.Column('resource_id', sa.String(length=36), nullable=False),
        sa.Column('tag', sa.String(length=80), nullable=False),
        sa.PrimaryKeyConstraint('resource_id', 'tag'))
    op.create_index('tags_tag_idx', 'tags', ['tag'])
