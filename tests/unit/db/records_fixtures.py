# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""SQLite api and cell databases for the record-module tests.

Tables are made from the SQLAlchemy metadata (the migrations are checked
against it by test_migrations), which is much faster than alembic.
"""

import uuid

from oslo_utils import timeutils

from common.conf import CONF
from common import context
from common.db import api_tables
from common.db import cell_tables
from common.db import cells
from common.objects import flavor as flavor_obj
from common.objects import instance as instance_obj
from common.objects import request_spec as spec_obj

CELL1_UUID = '4473067d-4c91-459f-93ae-79cb1e1203c7'
CELL2_UUID = '432015b0-14e9-4e81-96eb-2ec36d79773b'


def make_database(tmp_path, name, metadata):
    """A Database on a new SQLite file with ``metadata``'s tables."""
    database = cells.database_for_url(
        '%s test' % name, 'sqlite:///%s' % (tmp_path / ('%s.sqlite' % name)),
        CONF)
    metadata.create_all(database.engine())
    return database


def api_database(tmp_path):
    """An api database with cell0 and cell1 mapped."""
    return make_database(tmp_path, 'api', api_tables.metadata)


def cell_database(tmp_path, name='cell1'):
    """A cell database."""
    return make_database(tmp_path, name, cell_tables.metadata)


def map_cell(api_db, cell_uuid, name, database, transport_url='none:///'):
    """Add a cell mapping for ``database``."""
    def insert(ctx):
        ctx.session.execute(api_tables.cell_mappings.insert().values(
            uuid=cell_uuid, name=name, transport_url=transport_url,
            database_connection=database.connection, disabled=False,
            created_at=timeutils.utcnow()))
    api_db.writer(insert)(context.get_admin_context())


def ctxt(project_id='p1', user_id='u1'):
    """A plain user's context."""
    return context.RequestContext(user_id=user_id, project_id=project_id)


def flavor(vcpus=1, memory_mb=512, root_gb=1, extra_specs=None,
           name='small'):
    """A Flavor."""
    return flavor_obj.Flavor(name=name, flavorid=name, vcpus=vcpus,
                             memory_mb=memory_mb, root_gb=root_gb,
                             extra_specs=dict(extra_specs or {}))


def instance(uuid_=None, project_id='p1', **kwargs):
    """An Instance as the API builds it (no host yet)."""
    values = dict(uuid=uuid_ or str(uuid.uuid4()), display_name='vm',
                  project_id=project_id, user_id='u1', image_ref='img',
                  flavor=flavor(), task_state=instance_obj.SCHEDULING)
    values.update(kwargs)
    return instance_obj.Instance(**values)


def spec_for(inst, num_instances=1, **kwargs):
    """A RequestSpec for ``inst``."""
    return spec_obj.RequestSpec(
        instance_uuid=inst.uuid, project_id=inst.project_id,
        user_id=inst.user_id, flavor=inst.flavor,
        num_instances=num_instances, **kwargs)
