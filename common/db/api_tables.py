# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The api database schema as SQLAlchemy Core tables.

The api database holds what spans cells: where each cell's database and
message queue are (``cell_mappings``), which cell each compute host is in
(``host_mappings``), host aggregates and server groups. Table and column
names are Nova's so that operators' SQL keeps working. The alembic
migrations in ``api_migrations/`` create exactly this; a unit test compares
the two.
"""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

metadata = sa.MetaData()


def _timestamps():
    return [sa.Column('created_at', sa.DateTime),
            sa.Column('updated_at', sa.DateTime)]


cell_mappings = sa.Table(
    'cell_mappings', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('name', sa.String(255)),
    # NOTE: cell0 has ``none:///``: it holds instances that never got a
    # host, so nothing ever talks to a message queue of its own.
    sa.Column('transport_url', sa.Text, nullable=False),
    sa.Column('database_connection', sa.Text, nullable=False),
    sa.Column('disabled', sa.Boolean, nullable=False, default=False),
    *_timestamps(),
    sa.UniqueConstraint('uuid', name='uniq_cell_mappings0uuid'),
)

host_mappings = sa.Table(
    'host_mappings', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('cell_id', sa.Integer, sa.ForeignKey('cell_mappings.id'),
              nullable=False),
    sa.Column('host', sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('host', name='uniq_host_mappings0host'),
    sa.Index('host_mappings_cell_id_idx', 'cell_id'),
)

aggregates = sa.Table(
    'aggregates', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('name', sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('uuid', name='uniq_aggregates0uuid'),
    sa.UniqueConstraint('name', name='uniq_aggregates0name'),
)

aggregate_hosts = sa.Table(
    'aggregate_hosts', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('aggregate_id', sa.Integer, sa.ForeignKey('aggregates.id'),
              nullable=False),
    sa.Column('host', sa.String(255), nullable=False),
    *_timestamps(),
    # NOTE: host first: "which aggregates is this host in" is the
    # scheduler's question; aggregate_id has its own index for the API's.
    sa.UniqueConstraint('host', 'aggregate_id',
                        name='uniq_aggregate_hosts0host0aggregate_id'),
    sa.Index('aggregate_hosts_aggregate_id_idx', 'aggregate_id'),
)

aggregate_metadata = sa.Table(
    'aggregate_metadata', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('aggregate_id', sa.Integer, sa.ForeignKey('aggregates.id'),
              nullable=False),
    sa.Column('key', sa.String(255), nullable=False),
    sa.Column('value', sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('aggregate_id', 'key',
                        name='uniq_aggregate_metadata0aggregate_id0key'),
    # NOTE: the availability zone listing looks up one key everywhere.
    sa.Index('aggregate_metadata_key_idx', 'key'),
)

instance_groups = sa.Table(
    'instance_groups', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('name', sa.String(255)),
    sa.Column('project_id', sa.String(255)),
    sa.Column('user_id', sa.String(255)),
    *_timestamps(),
    sa.UniqueConstraint('uuid', name='uniq_instance_groups0uuid'),
)

instance_group_policy = sa.Table(
    'instance_group_policy', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('group_id', sa.Integer, sa.ForeignKey('instance_groups.id'),
              nullable=False),
    sa.Column('policy', sa.String(255)),
    # NOTE: JSON text, e.g. {"max_server_per_host": 2} for anti-affinity.
    sa.Column('rules', sa.Text),
    *_timestamps(),
    sa.Index('instance_group_policy_group_id_idx', 'group_id'),
)

instance_group_member = sa.Table(
    'instance_group_member', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('group_id', sa.Integer, sa.ForeignKey('instance_groups.id'),
              nullable=False),
    sa.Column('instance_uuid', sa.String(36), nullable=False),
    *_timestamps(),
    sa.Index('instance_group_member_group_id_idx', 'group_id'),
    # NOTE: "which group is this instance in" on every move and delete.
    sa.Index('instance_group_member_instance_idx', 'instance_uuid'),
)

# --- the boot path: flavors, requests, mappings, quotas ---------------------

flavors = sa.Table(
    'flavors', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('flavorid', sa.String(255), nullable=False),
    sa.Column('name', sa.String(255), nullable=False),
    sa.Column('memory_mb', sa.Integer, nullable=False),
    sa.Column('vcpus', sa.Integer, nullable=False),
    sa.Column('root_gb', sa.Integer, nullable=False, default=0),
    sa.Column('ephemeral_gb', sa.Integer, nullable=False, default=0),
    sa.Column('swap', sa.Integer, nullable=False, default=0),
    sa.Column('rxtx_factor', sa.Float, nullable=False, default=1.0),
    sa.Column('is_public', sa.Boolean, nullable=False, default=True),
    sa.Column('disabled', sa.Boolean, nullable=False, default=False),
    sa.Column('description', sa.Text),
    *_timestamps(),
    sa.UniqueConstraint('flavorid', name='uniq_flavors0flavorid'),
    sa.UniqueConstraint('name', name='uniq_flavors0name'),
)

flavor_extra_specs = sa.Table(
    'flavor_extra_specs', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('flavor_id', sa.Integer, sa.ForeignKey('flavors.id'),
              nullable=False),
    sa.Column('key', sa.String(255), nullable=False),
    sa.Column('value', sa.String(255)),
    *_timestamps(),
    sa.UniqueConstraint('flavor_id', 'key',
                        name='uniq_flavor_extra_specs0flavor_id0key'),
)

flavor_projects = sa.Table(
    'flavor_projects', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('flavor_id', sa.Integer, sa.ForeignKey('flavors.id'),
              nullable=False),
    sa.Column('project_id', sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('flavor_id', 'project_id',
                        name='uniq_flavor_projects0flavor_id0project_id'),
)

instance_mappings = sa.Table(
    'instance_mappings', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('instance_uuid', sa.String(36), nullable=False),
    # NOTE: NULL while the instance is still a build request: the cell is
    # known only once the scheduler has chosen a host (or cell0 on
    # NoValidHost).
    sa.Column('cell_id', sa.Integer, sa.ForeignKey('cell_mappings.id')),
    sa.Column('project_id', sa.String(255), nullable=False),
    sa.Column('user_id', sa.String(255)),
    sa.Column('queued_for_delete', sa.Boolean, nullable=False,
              default=False),
    *_timestamps(),
    sa.UniqueConstraint('instance_uuid',
                        name='uniq_instance_mappings0instance_uuid'),
    sa.Index('instance_mappings_project_id_idx', 'project_id'),
    sa.Index('instance_mappings_cell_id_idx', 'cell_id'),
)

request_specs = sa.Table(
    'request_specs', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('instance_uuid', sa.String(36), nullable=False),
    # NOTE: JSON text of common.objects.request_spec.RequestSpec; kept for
    # reschedules, heal_allocations and later moves.
    sa.Column('spec', sa.Text().with_variant(
        mysql.MEDIUMTEXT(), 'mysql'), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('instance_uuid',
                        name='uniq_request_specs0instance_uuid'),
)

build_requests = sa.Table(
    'build_requests', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('instance_uuid', sa.String(36), nullable=False),
    sa.Column('project_id', sa.String(255), nullable=False),
    # NOTE: JSON text of the instance as the API shows it before it has a
    # cell (name, flavor, image, metadata, AZ...).
    sa.Column('instance', sa.Text().with_variant(
        mysql.MEDIUMTEXT(), 'mysql'), nullable=False),
    # NOTE: the flavor's sizes, summed by quota counting (NULL in rows
    # written before api migration 0004: counted from ``instance``).
    sa.Column('vcpus', sa.Integer, nullable=True),
    sa.Column('memory_mb', sa.Integer, nullable=True),
    *_timestamps(),
    sa.UniqueConstraint('instance_uuid',
                        name='uniq_build_requests0instance_uuid'),
    sa.Index('build_requests_project_id_idx', 'project_id'),
)

quotas = sa.Table(
    'quotas', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('project_id', sa.String(255), nullable=False),
    sa.Column('resource', sa.String(255), nullable=False),
    sa.Column('hard_limit', sa.Integer),
    *_timestamps(),
    sa.UniqueConstraint('project_id', 'resource',
                        name='uniq_quotas0project_id0resource'),
)

# NOTE: the built-in image catalog, used when no Glance is configured
# (services/api/records/images.py): image records and their properties,
# never image data.
images = sa.Table(
    'images', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('name', sa.String(255)),
    sa.Column('status', sa.String(30), nullable=False),
    sa.Column('visibility', sa.String(20), nullable=False),
    sa.Column('protected', sa.Boolean, nullable=False, default=False),
    sa.Column('os_hidden', sa.Boolean, nullable=False, default=False),
    sa.Column('owner', sa.String(255)),
    sa.Column('disk_format', sa.String(20)),
    sa.Column('container_format', sa.String(20)),
    sa.Column('size', sa.BigInteger),
    sa.Column('checksum', sa.String(32)),
    sa.Column('min_ram', sa.Integer, nullable=False, default=0),
    sa.Column('min_disk', sa.Integer, nullable=False, default=0),
    sa.Column('tags', sa.Text, nullable=False),
    sa.Column('properties', sa.Text().with_variant(mysql.MEDIUMTEXT(),
                                                   'mysql'), nullable=False),
    sa.Column('created_at', sa.DateTime),
    sa.Column('updated_at', sa.DateTime),
    sa.UniqueConstraint('uuid', name='uniq_images0uuid'),
)

# NOTE: key pairs belong to a user, not a project (as in Nova's api
# database); the name is unique per user.
key_pairs = sa.Table(
    'key_pairs', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('name', sa.String(255), nullable=False),
    sa.Column('user_id', sa.String(255), nullable=False),
    sa.Column('fingerprint', sa.String(255)),
    sa.Column('public_key', sa.Text),
    sa.Column('type', sa.String(32), nullable=False, default='ssh'),
    *_timestamps(),
    sa.UniqueConstraint('user_id', 'name',
                        name='uniq_key_pairs0user_id0name'),
)

# NOTE: os-quota-class-sets: the limits of a quota class; only the
# ``default`` class is used, as in Nova, and a row here overrides the
# configured default of its resource.
quota_classes = sa.Table(
    'quota_classes', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('class_name', sa.String(255), nullable=False),
    sa.Column('resource', sa.String(255), nullable=False),
    sa.Column('hard_limit', sa.Integer),
    *_timestamps(),
    sa.UniqueConstraint('class_name', 'resource',
                        name='uniq_quota_classes0class_name0resource'),
)
