# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""An index on instance_actions_events.action_id

MySQL had one already (the foreign key's own, which this replaces);
on PostgreSQL and SQLite finishing or listing an action's events read
the whole table.

Revision ID: 8a1f2b3c4d5e
Revises: 5d7e8f9a0b1c
Create Date: 2026-11-25 05:20:00.000000
"""

from alembic import op

revision = '8a1f2b3c4d5e'
down_revision = '5d7e8f9a0b1c'
branch_labels = None
depends_on = None


def upgrade():
    op.create_index('instance_actions_events_action_id_idx',
                    'instance_actions_events', ['action_id'])
