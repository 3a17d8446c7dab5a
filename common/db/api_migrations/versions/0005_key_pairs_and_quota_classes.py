# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""key_pairs and quota_classes

Key pairs (os-keypairs) belong to a user, unique by name per user.
quota_classes holds os-quota-class-sets limits (the ``default`` class
overrides the configured defaults).

Revision ID: 4e7a9c1b3d5f
Revises: 9b2c4d6e8f10
Create Date: 2026-11-28 03:40:00.000000
"""

from alembic import op
import sqlalchemy as sa

revision = '4e7a9c1b3d5f'
down_revision = '9b2c4d6e8f10'
branch_labels = None
depends_on = None


def _timestamps():
    return [sa.Column('created_at', sa.DateTime(), nullable=True),
            sa.Column('updated_at', sa.DateTime(), nullable=True)]


def upgrade():
    op.create_table(
        'key_pairs',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=255), nullable=False),
        sa.Column('user_id', sa.String(length=255), nullable=False),
        sa.Column('fingerprint', sa.String(length=255), nullable=True),
        sa.Column('public_key', sa.Text(), nullable=True),
        sa.Column('type', sa.String(length=32), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('user_id', 'name',
                            name='uniq_key_pairs0user_id0name'))
    op.create_table(
        'quota_classes',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('class_name', sa.String(length=255), nullable=False),
        sa.Column('resource', sa.String(length=255), nullable=False),
        sa.Column('hard_limit', sa.Integer(), nullable=True),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('class_name', 'resource',
                            name='uniq_quota_classes0class_name0resource'))
