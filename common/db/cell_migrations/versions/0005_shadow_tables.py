# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Shadow tables for the archive of soft-deleted rows

``berth-manage db archive_deleted_rows`` moves deleted services, compute
nodes and instances (with the faults and actions of those instances) to
shadow_<table>, which ``berth-manage db purge`` empties. The copies have
the columns of their table and an index on id, but no key or constraint.

Revision ID: 3b9c0d1e2f4a
Revises: 8a1f2b3c4d5e
Create Date: 2026-11-27 00:20:00.000000
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '3b9c0d1e2f4a'
down_revision = '8a1f2b3c4d5e'
branch_labels = None
depends_on = None


def _int(name, nullable=True):
    return sa.Column(name, sa.Integer(), nullable=nullable)


def _string(name, length=255, nullable=True):
    return sa.Column(name, sa.String(length=length), nullable=nullable)


def _datetime(name):
    return sa.Column(
        name, sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql'),
        nullable=True)


def _json_text(name):
    return sa.Column(
        name, sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql'),
        nullable=True)


def _history():
    return [_datetime('created_at'), _datetime('updated_at'),
            _datetime('deleted_at'), _int('deleted', nullable=False)]


def _shadow(name, *columns):
    table = 'shadow_' + name
    op.create_table(table, _int('id', nullable=False), *columns,
                    *_history())
    op.create_index('shadow_%s_id_idx' % name, table, ['id'])


def upgrade():
    _shadow('services',
            _string('uuid', 36), _string('host'), _string('binary'),
            _string('topic'), _int('report_count', nullable=False),
            sa.Column('disabled', sa.Boolean(), nullable=False),
            _string('disabled_reason'),
            sa.Column('forced_down', sa.Boolean(), nullable=False),
            _datetime('last_seen_up'), _int('version', nullable=False))
    _shadow('compute_nodes',
            _string('uuid', 36, nullable=False), _int('service_id'),
            _string('host'), _string('hypervisor_hostname'),
            _string('host_ip', 39),
            _int('vcpus', nullable=False), _int('memory_mb', nullable=False),
            _int('local_gb', nullable=False),
            _int('vcpus_used', nullable=False),
            _int('memory_mb_used', nullable=False),
            _int('local_gb_used', nullable=False),
            _int('free_ram_mb'), _int('free_disk_gb'), _int('running_vms'),
            _int('current_workload'), _string('hypervisor_type'),
            _int('hypervisor_version'),
            _json_text('cpu_info'), _json_text('numa_topology'),
            _json_text('pci_stats'), _json_text('metrics'),
            _json_text('stats'), _json_text('supported_instances'),
            sa.Column('cpu_allocation_ratio', sa.Float(), nullable=True),
            sa.Column('ram_allocation_ratio', sa.Float(), nullable=True),
            sa.Column('disk_allocation_ratio', sa.Float(), nullable=True),
            _int('mapped', nullable=False))
    _shadow('instances',
            _string('uuid', 36, nullable=False), _string('host'),
            _string('node'), _string('project_id'), _string('user_id'),
            _string('image_ref'), _json_text('flavor'), _string('vm_state'),
            _string('task_state'), _int('power_state'),
            _string('availability_zone'), _json_text('numa_topology'),
            _json_text('pci_requests'), _datetime('launched_at'),
            _datetime('terminated_at'), _string('display_name'),
            _string('reservation_id'), _int('launch_index'),
            _json_text('metadata'), _json_text('image_meta'),
            _int('vcpus'), _int('memory_mb'))
    _shadow('instance_faults',
            _string('instance_uuid', 36, nullable=False),
            _int('code', nullable=False), _string('message'),
            _json_text('details'), _string('host'))
    _shadow('instance_actions',
            _string('action'), _string('instance_uuid', 36),
            _string('request_id'), _string('user_id'), _string('project_id'),
            _datetime('start_time'), _datetime('finish_time'),
            _string('message'))
    _shadow('instance_actions_events',
            _string('event'), _int('action_id'), _datetime('start_time'),
            _datetime('finish_time'), _string('result'),
            sa.Column('traceback', sa.Text(), nullable=True),
            _string('host'), sa.Column('details', sa.Text(), nullable=True))
