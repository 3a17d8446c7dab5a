# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The placement schema as SQLAlchemy Core tables.

The layout follows upstream placement's so that operators recognise it:
providers form trees through root/parent ids, inventories and allocations
refer to resource classes by integer id, consumers belong to a project and a
user. The alembic migrations in ``migrations/`` create exactly this; a
unit test compares the two.
"""

import sqlalchemy as sa

metadata = sa.MetaData()


def _timestamps():
    return [sa.Column('created_at', sa.DateTime),
            sa.Column('updated_at', sa.DateTime)]


resource_providers = sa.Table(
    'resource_providers', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('name', sa.Unicode(200), nullable=False),
    sa.Column('generation', sa.Integer, nullable=False, default=0),
    # NOTE: Berth's own, never shown over the API: moved on whenever
    # allocations are deleted from the provider (which, as upstream, leaves
    # the generation alone), so that generation and usage_serial together
    # change with every change of the provider's usage, inventory and
    # traits (see objects/provider_cache.py).
    sa.Column('usage_serial', sa.Integer, nullable=False, default=0,
              server_default='0'),
    sa.Column('root_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id')),
    sa.Column('parent_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id')),
    *_timestamps(),
    sa.UniqueConstraint('uuid', name='uniq_resource_providers0uuid'),
    sa.UniqueConstraint('name', name='uniq_resource_providers0name'),
    sa.Index('resource_providers_root_provider_id_idx', 'root_provider_id'),
    sa.Index('resource_providers_parent_provider_id_idx',
             'parent_provider_id'),
)

resource_classes = sa.Table(
    'resource_classes', metadata,
    # NOTE: ids are assigned by Berth, not by the database: standard classes
    # take 1 + their index in os-resource-classes, custom ones 10000 and up.
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=False),
    sa.Column('name', sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('name', name='uniq_resource_classes0name'),
)

inventories = sa.Table(
    'inventories', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('resource_provider_id', sa.Integer, nullable=False),
    sa.Column('resource_class_id', sa.Integer, nullable=False),
    sa.Column('total', sa.Integer, nullable=False),
    sa.Column('reserved', sa.Integer, nullable=False),
    sa.Column('min_unit', sa.Integer, nullable=False),
    sa.Column('max_unit', sa.Integer, nullable=False),
    sa.Column('step_size', sa.Integer, nullable=False),
    sa.Column('allocation_ratio', sa.Float, nullable=False),
    *_timestamps(),
    sa.UniqueConstraint(
        'resource_provider_id', 'resource_class_id',
        name='uniq_inventories0resource_provider_resource_class'),
    sa.Index('inventories_resource_class_id_idx', 'resource_class_id'),
)

allocations = sa.Table(
    'allocations', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('resource_provider_id', sa.Integer, nullable=False),
    sa.Column('consumer_id', sa.String(36), nullable=False),
    sa.Column('resource_class_id', sa.Integer, nullable=False),
    sa.Column('used', sa.Integer, nullable=False),
    *_timestamps(),
    sa.Index('allocations_resource_provider_class_used_idx',
             'resource_provider_id', 'resource_class_id', 'used'),
    sa.Index('allocations_resource_class_id_idx', 'resource_class_id'),
    sa.Index('allocations_consumer_id_idx', 'consumer_id'),
)

projects = sa.Table(
    'projects', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('external_id', sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('external_id', name='uniq_projects0external_id'),
)

users = sa.Table(
    'users', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('external_id', sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('external_id', name='uniq_users0external_id'),
)

consumer_types = sa.Table(
    'consumer_types', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('name', sa.Unicode(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('name', name='uniq_consumer_types0name'),
)

consumers = sa.Table(
    'consumers', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('project_id', sa.Integer, nullable=False),
    sa.Column('user_id', sa.Integer, nullable=False),
    sa.Column('generation', sa.Integer, nullable=False, default=0,
              server_default=sa.text('0')),
    sa.Column('consumer_type_id', sa.Integer,
              sa.ForeignKey('consumer_types.id')),
    *_timestamps(),
    sa.UniqueConstraint('uuid', name='uniq_consumers0uuid'),
    sa.Index('consumers_project_id_user_id_uuid_idx',
             'project_id', 'user_id', 'uuid'),
)

traits = sa.Table(
    'traits', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('name', sa.Unicode(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('name', name='uniq_traits0name'),
)

resource_provider_traits = sa.Table(
    'resource_provider_traits', metadata,
    sa.Column('trait_id', sa.Integer, sa.ForeignKey('traits.id'),
              primary_key=True, nullable=False),
    sa.Column('resource_provider_id', sa.Integer, primary_key=True,
              nullable=False),
    *_timestamps(),
    sa.Index('resource_provider_traits_resource_provider_trait_idx',
             'resource_provider_id', 'trait_id'),
)

placement_aggregates = sa.Table(
    'placement_aggregates', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(36)),
    *_timestamps(),
    sa.UniqueConstraint('uuid', name='uniq_placement_aggregates0uuid'),
)

resource_provider_aggregates = sa.Table(
    'resource_provider_aggregates', metadata,
    sa.Column('resource_provider_id', sa.Integer, primary_key=True,
              nullable=False),
    sa.Column('aggregate_id', sa.Integer, primary_key=True, nullable=False),
    *_timestamps(),
    sa.Index('resource_provider_aggregates_aggregate_id_idx',
             'aggregate_id'),
)
