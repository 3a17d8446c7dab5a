# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A cell database's schema as SQLAlchemy Core tables.

Every cell database (cell0, cell1..N) has this schema: the services of the
cell with their heartbeats, the compute nodes (whose uuid is the placement
resource provider's uuid) and the instances. Table and column names are
Nova's so that operators' SQL keeps working.

Services, compute nodes and instances are soft-deleted, as users expect
their history: ``deleted`` is 0 for a live row and the row's ``id`` once
deleted (so that unique constraints including it allow a new live row),
and ``deleted_at`` says when. Queries for live rows say ``deleted == 0``.

Columns holding structures are JSON text: ``compute_nodes.numa_topology``
(the host NUMA primitive of :mod:`common.numa`), ``pci_stats`` (list of
device pools), ``metrics`` (list of {name, value, timestamp, source}),
``stats`` (name -> value, e.g. ``num_instances``, ``io_workload``),
``supported_instances`` (list of [arch, hv_type, vm_mode]), ``cpu_info``;
``instances.flavor`` (the flavor the instance runs with: flavorid, name,
vcpus, memory_mb, root_gb, ephemeral_gb, swap, extra_specs),
``numa_topology`` and ``pci_requests``.
"""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

metadata = sa.MetaData()


def _datetime():
    # NOTE: microseconds on MySQL/MariaDB too (DATETIME(6)): the scheduler
    # reloads a host state when its record's updated_at changed, and two
    # updates within one second must not look like one.
    return sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def _json_text():
    # NOTE: MEDIUMTEXT on MySQL/MariaDB, whose TEXT stops at 64 KiB: the
    # NUMA topology of a large host with its pinned CPUs, or a PCI pool
    # list, can be longer.
    return sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql')


def _history():
    return [sa.Column('created_at', _datetime()),
            sa.Column('updated_at', _datetime()),
            sa.Column('deleted_at', _datetime()),
            sa.Column('deleted', sa.Integer, nullable=False, default=0)]


services = sa.Table(
    'services', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(36)),
    sa.Column('host', sa.String(255)),
    sa.Column('binary', sa.String(255)),
    sa.Column('topic', sa.String(255)),
    sa.Column('report_count', sa.Integer, nullable=False, default=0),
    sa.Column('disabled', sa.Boolean, nullable=False, default=False),
    sa.Column('disabled_reason', sa.String(255)),
    sa.Column('forced_down', sa.Boolean, nullable=False, default=False),
    # NOTE: the last heartbeat, kept apart from updated_at, which an
    # administrator's enable/disable also moves.
    sa.Column('last_seen_up', _datetime()),
    sa.Column('version', sa.Integer, nullable=False, default=0),
    *_history(),
    sa.UniqueConstraint('host', 'binary', 'deleted',
                        name='uniq_services0host0binary0deleted'),
    sa.UniqueConstraint('host', 'topic', 'deleted',
                        name='uniq_services0host0topic0deleted'),
    sa.Index('services_uuid_idx', 'uuid', unique=True),
)

compute_nodes = sa.Table(
    'compute_nodes', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    # NOTE: the placement resource provider's uuid. A compute node row
    # recreated after a deletion gets a new one.
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('service_id', sa.Integer),
    sa.Column('host', sa.String(255)),
    sa.Column('hypervisor_hostname', sa.String(255)),
    sa.Column('host_ip', sa.String(39)),
    sa.Column('vcpus', sa.Integer, nullable=False),
    sa.Column('memory_mb', sa.Integer, nullable=False),
    sa.Column('local_gb', sa.Integer, nullable=False),
    sa.Column('vcpus_used', sa.Integer, nullable=False, default=0),
    sa.Column('memory_mb_used', sa.Integer, nullable=False, default=0),
    sa.Column('local_gb_used', sa.Integer, nullable=False, default=0),
    sa.Column('free_ram_mb', sa.Integer),
    sa.Column('free_disk_gb', sa.Integer),
    sa.Column('running_vms', sa.Integer),
    sa.Column('current_workload', sa.Integer),
    sa.Column('hypervisor_type', sa.String(255)),
    sa.Column('hypervisor_version', sa.Integer),
    sa.Column('cpu_info', _json_text()),
    sa.Column('numa_topology', _json_text()),
    sa.Column('pci_stats', _json_text()),
    sa.Column('metrics', _json_text()),
    sa.Column('stats', _json_text()),
    sa.Column('supported_instances', _json_text()),
    sa.Column('cpu_allocation_ratio', sa.Float),
    sa.Column('ram_allocation_ratio', sa.Float),
    sa.Column('disk_allocation_ratio', sa.Float),
    # NOTE: 0 until ``cell_v2 discover_hosts`` has created the host's
    # host mapping; discovery looks only at unmapped nodes.
    sa.Column('mapped', sa.Integer, nullable=False, default=0),
    *_history(),
    sa.UniqueConstraint(
        'host', 'hypervisor_hostname', 'deleted',
        name='uniq_compute_nodes0host0hypervisor_hostname0deleted'),
    sa.Index('compute_nodes_uuid_idx', 'uuid', unique=True),
    # NOTE: the scheduler asks "which of these nodes changed since".
    sa.Index('compute_nodes_updated_at_idx', 'updated_at'),
)

instances = sa.Table(
    'instances', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('host', sa.String(255)),
    sa.Column('node', sa.String(255)),
    sa.Column('project_id', sa.String(255)),
    sa.Column('user_id', sa.String(255)),
    sa.Column('image_ref', sa.String(255)),
    # NOTE: the instance's own copy of its flavor, so that a later change
    # or deletion of the flavor in the api database does not alter it.
    sa.Column('flavor', _json_text()),
    sa.Column('vm_state', sa.String(255)),
    sa.Column('task_state', sa.String(255)),
    sa.Column('power_state', sa.Integer),
    sa.Column('availability_zone', sa.String(255)),
    sa.Column('numa_topology', _json_text()),
    sa.Column('pci_requests', _json_text()),
    sa.Column('launched_at', _datetime()),
    sa.Column('terminated_at', _datetime()),
    sa.Column('display_name', sa.String(255)),
    # NOTE: the guest's hostname (Nova's column): the sanitized name, or
    # the user's choice from compute API 2.90 (an FQDN from 2.94).
    sa.Column('hostname', sa.String(255)),
    sa.Column('reservation_id', sa.String(255)),
    sa.Column('launch_index', sa.Integer),
    # NOTE: user metadata (key -> value) and the image's properties at boot
    # time (the instance's own copy, as for the flavor).
    sa.Column('metadata', _json_text()),
    sa.Column('image_meta', _json_text()),
    # NOTE: the flavor's vCPUs and RAM, as in Nova's table, so that quota
    # usage is summed by the database instead of decoding every flavor.
    sa.Column('vcpus', sa.Integer),
    sa.Column('memory_mb', sa.Integer),
    # NOTE: Nova's columns for what a user sets or sees of a server after
    # boot: the lock (who locked it: owner or admin), the key pair copied
    # at boot, the 2.19 description, the access addresses, and the
    # system metadata (lock reason, image details, state kept across an
    # action, the server password), key -> value as JSON.
    sa.Column('locked', sa.Boolean, nullable=False, default=False),
    sa.Column('locked_by', sa.String(255)),
    sa.Column('key_name', sa.String(255)),
    sa.Column('key_data', sa.Text),
    sa.Column('display_description', sa.Text),
    sa.Column('access_ip_v4', sa.String(39)),
    sa.Column('access_ip_v6', sa.String(39)),
    sa.Column('system_metadata', _json_text()),
    # NOTE: while the server moves, what it has on each side (see
    # common/objects/migration.py MigrationContext), as JSON.
    sa.Column('migration_context', _json_text()),
    *_history(),
    sa.UniqueConstraint('uuid', name='uniq_instances0uuid'),
    # NOTE: the live instances of a host: the scheduler's host states and
    # the resource tracker's audit.
    sa.Index('instances_host_deleted_idx', 'host', 'deleted'),
    sa.Index('instances_project_id_deleted_idx', 'project_id', 'deleted'),
)

instance_faults = sa.Table(
    'instance_faults', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('instance_uuid', sa.String(36), nullable=False),
    sa.Column('code', sa.Integer, nullable=False),
    sa.Column('message', sa.String(255)),
    # NOTE: for NoValidHost, the scheduler's explanation as JSON text.
    sa.Column('details', _json_text()),
    sa.Column('host', sa.String(255)),
    *_history(),
    sa.Index('instance_faults_instance_uuid_deleted_created_at_idx',
             'instance_uuid', 'deleted', 'created_at'),
)

instance_actions = sa.Table(
    'instance_actions', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('action', sa.String(255)),
    sa.Column('instance_uuid', sa.String(36)),
    sa.Column('request_id', sa.String(255)),
    sa.Column('user_id', sa.String(255)),
    sa.Column('project_id', sa.String(255)),
    sa.Column('start_time', _datetime()),
    sa.Column('finish_time', _datetime()),
    sa.Column('message', sa.String(255)),
    *_history(),
    sa.Index('instance_uuid_idx', 'instance_uuid'),
    sa.Index('request_id_idx', 'request_id'),
)

instance_actions_events = sa.Table(
    'instance_actions_events', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('event', sa.String(255)),
    sa.Column('action_id', sa.Integer, sa.ForeignKey('instance_actions.id')),
    sa.Column('start_time', _datetime()),
    sa.Column('finish_time', _datetime()),
    sa.Column('result', sa.String(255)),
    sa.Column('traceback', sa.Text),
    sa.Column('host', sa.String(255)),
    sa.Column('details', sa.Text),
    *_history(),
    # NOTE: MySQL indexes a foreign key's column by itself; PostgreSQL and
    # SQLite do not, and every event finished or listed looks its action
    # up.
    sa.Index('instance_actions_events_action_id_idx', 'action_id'),
)


# NOTE: every move of a server (resize, cold and live migration,
# evacuation), Nova's columns; the flavors are the instance's own copies
# (JSON) rather than ids, as instances keep theirs. Soft-deleted and
# archived with their instance.
migrations = sa.Table(
    'migrations', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('instance_uuid', sa.String(36), nullable=False),
    sa.Column('migration_type', sa.String(255)),
    sa.Column('status', sa.String(255)),
    sa.Column('source_compute', sa.String(255)),
    sa.Column('source_node', sa.String(255)),
    sa.Column('dest_compute', sa.String(255)),
    sa.Column('dest_node', sa.String(255)),
    sa.Column('dest_host', sa.String(255)),
    sa.Column('old_flavor', _json_text()),
    sa.Column('new_flavor', _json_text()),
    sa.Column('project_id', sa.String(255)),
    sa.Column('user_id', sa.String(255)),
    sa.Column('hidden', sa.Boolean, nullable=False, default=False),
    sa.Column('cross_cell_move', sa.Boolean, nullable=False, default=False),
    sa.Column('memory_total', sa.BigInteger),
    sa.Column('memory_processed', sa.BigInteger),
    sa.Column('memory_remaining', sa.BigInteger),
    sa.Column('disk_total', sa.BigInteger),
    sa.Column('disk_processed', sa.BigInteger),
    sa.Column('disk_remaining', sa.BigInteger),
    *_history(),
    sa.Index('migrations_uuid_idx', 'uuid', unique=True),
    sa.Index('migrations_instance_uuid_and_status_idx', 'deleted',
             'instance_uuid', 'status'),
    # NOTE: the resource trackers ask for the moves in progress to or
    # from their host.
    sa.Index('migrations_source_compute_status_idx', 'source_compute',
             'status'),
    sa.Index('migrations_dest_compute_status_idx', 'dest_compute',
             'status'),
    sa.Index('migrations_updated_at_idx', 'updated_at'),
)


# NOTE: server tags (2.26) as Nova keeps them: no history columns; an
# instance's tags go when its row is destroyed, so none is ever archived.
tags = sa.Table(
    'tags', metadata,
    sa.Column('resource_id', sa.String(36), primary_key=True,
              nullable=False),
    sa.Column('tag', sa.String(80), primary_key=True, nullable=False),
    sa.Index('tags_tag_idx', 'tag'),
)


def _shadow(table):
    # NOTE: no primary key, no unique constraint, no foreign key: SQLite
    # (and MariaDB before 10.2.4) hand the id of a deleted newest row out
    # again, so an archived id may be archived a second time; the shadow
    # copy keeps both rather than failing the archive.
    columns = [sa.Column(c.name, c.type, nullable=c.nullable
                         and not c.primary_key) for c in table.columns]
    return sa.Table('shadow_' + table.name, metadata, *columns,
                    sa.Index('shadow_%s_id_idx' % table.name, 'id'))


# NOTE: the archive (``berth-manage db archive_deleted_rows``, see
# doc/operations.md) moves soft-deleted rows and the rows that belong to
# them to these copies, which ``db purge`` empties.
ARCHIVED = (services, compute_nodes, instances, instance_faults,
            instance_actions, instance_actions_events, migrations)
shadow_tables = {table.name: _shadow(table) for table in ARCHIVED}
