# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Initial placement schema

Revision ID: b0a1d2c3e4f5
Revises:
Create Date: 2026-11-21 12:48:57.972799
"""

from alembic import op
import sqlalchemy as sa


revision = 'b0a1d2c3e4f5'
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('allocations',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('resource_provider_id', sa.Integer(), nullable=False),
    sa.Column('consumer_id', sa.String(length=36), nullable=False),
    sa.Column('resource_class_id', sa.Integer(), nullable=False),
    sa.Column('used', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('allocations', schema=None) as batch_op:
        batch_op.create_index('allocations_consumer_id_idx', ['consumer_id'], unique=False)
        batch_op.create_index('allocations_resource_class_id_idx', ['resource_class_id'], unique=False)
        batch_op.create_index('allocations_resource_provider_class_used_idx', ['resource_provider_id', 'resource_class_id', 'used'], unique=False)

    op.create_table('consumer_types',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', sa.Unicode(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name', name='uniq_consumer_types0name')
    )
    op.create_table('inventories',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('resource_provider_id', sa.Integer(), nullable=False),
    sa.Column('resource_class_id', sa.Integer(), nullable=False),
    sa.Column('total', sa.Integer(), nullable=False),
    sa.Column('reserved', sa.Integer(), nullable=False),
    sa.Column('min_unit', sa.Integer(), nullable=False),
    sa.Column('max_unit', sa.Integer(), nullable=False),
    sa.Column('step_size', sa.Integer(), nullable=False),
    sa.Column('allocation_ratio', sa.Float(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('resource_provider_id', 'resource_class_id', name='uniq_inventories0resource_provider_resource_class')
    )
    with op.batch_alter_table('inventories', schema=None) as batch_op:
        batch_op.create_index('inventories_resource_class_id_idx', ['resource_class_id'], unique=False)

    op.create_table('placement_aggregates',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('uuid', name='uniq_placement_aggregates0uuid')
    )
    op.create_table('projects',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('external_id', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('external_id', name='uniq_projects0external_id')
    )
    op.create_table('resource_classes',
    sa.Column('id', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name', name='uniq_resource_classes0name')
    )
    op.create_table('resource_provider_aggregates',
    sa.Column('resource_provider_id', sa.Integer(), nullable=False),
    sa.Column('aggregate_id', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('resource_provider_id', 'aggregate_id')
    )
    with op.batch_alter_table('resource_provider_aggregates', schema=None) as batch_op:
        batch_op.create_index('resource_provider_aggregates_aggregate_id_idx', ['aggregate_id'], unique=False)

    op.create_table('resource_providers',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=False),
    sa.Column('name', sa.Unicode(length=200), nullable=False),
    sa.Column('generation', sa.Integer(), nullable=False),
    sa.Column('root_provider_id', sa.Integer(), nullable=True),
    sa.Column('parent_provider_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['parent_provider_id'], ['resource_providers.id'], ),
    sa.ForeignKeyConstraint(['root_provider_id'], ['resource_providers.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name', name='uniq_resource_providers0name'),
    sa.UniqueConstraint('uuid', name='uniq_resource_providers0uuid')
    )
    with op.batch_alter_table('resource_providers', schema=None) as batch_op:
        batch_op.create_index('resource_providers_parent_provider_id_idx', ['parent_provider_id'], unique=False)
        batch_op.create_index('resource_providers_root_provider_id_idx', ['root_provider_id'], unique=False)

    op.create_table('traits',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', sa.Unicode(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name', name='uniq_traits0name')
    )
    op.create_table('users',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('external_id', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('external_id', name='uniq_users0external_id')
    )
    op.create_table('consumers',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('generation', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('consumer_type_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['consumer_type_id'], ['consumer_types.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('uuid', name='uniq_consumers0uuid')
    )
    with op.batch_alter_table('consumers', schema=None) as batch_op:
        batch_op.create_index('consumers_project_id_user_id_uuid_idx', ['project_id', 'user_id', 'uuid'], unique=False)

    op.create_table('resource_provider_traits',
    sa.Column('trait_id', sa.Integer(), nullable=False),
    sa.Column('resource_provider_id', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['trait_id'], ['traits.id'], ),
    sa.PrimaryKeyConstraint('trait_id', 'resource_provider_id')
    )
    with op.batch_alter_table('resource_provider_traits', schema=None) as batch_op:
        batch_op.create_index('resource_provider_traits_resource_provider_trait_idx', ['resource_provider_id', 'trait_id'], unique=False)


