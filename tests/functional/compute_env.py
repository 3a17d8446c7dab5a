# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A compute agent with its peers, for the compute agent's functional tests.

Built on :class:`tests.functional.stack.Stack` (databases, RabbitMQ
virtual host, schemas, cells), but only placement, the conductor and
``berth-compute`` run, each its own process as its systemd unit runs it;
the agent's hosts are checked through the cell database, placement's
HTTP API and the agent's output::

    env = ComputeEnv(make_database, hosts=3, extra_conf={...})
    env.setup(); env.start()
    env.wait_for(lambda: len(env.compute_nodes()) == 3)
    env.placement.request('GET', '/resource_providers')
    env.stop()

Nothing here imports pytest.
"""

import json
import signal
import time
import uuid

from oslo_utils import timeutils
import sqlalchemy as sa

from common import context
from common.db import cell_tables
from common.db import cells
from common.db import instance_records
from common.objects import flavor as flavor_obj
from common.objects import instance as instance_obj
from tests.functional import scheduler_env
from tests.functional import stack as stack_mod

PROCESSES = ('berth-placement-api', 'berth-conductor', 'berth-compute')
UPDATE_INTERVAL = 2
WAIT_TIMEOUT = 60


class ComputeEnv(stack_mod.Stack):
    """Placement, a conductor and one compute agent simulating ``hosts``.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._stopped = set()
        self._cell = None

    def _conf_groups(self):
        groups = super()._conf_groups()
        groups['DEFAULT']['update_resources_interval'] = UPDATE_INTERVAL
        # NOTE: the stack's host names (stack-host1...) from the fake
        # driver's pattern.
        groups['fake_driver']['host_name_pattern'] = 'stack-host{number}'
        groups['compute']['orphan_allocation_grace_period'] = 0
        return groups

    def start(self):
        """Start placement, the conductor and the compute agent."""
        self.start_service('berth-placement-api')
        self.placement = scheduler_env.Placement(self.placement_url)
        self.start_service('berth-conductor')
        self.start_service('berth-compute')
        self._cell = cells.database_for_url('cell1', self.urls['cell1'])
        return self

    def stop_service(self, binary, sig=signal.SIGTERM):
        """Stop one service on purpose (:meth:`wait_for` then ignores it).
        """
        self._stopped.add(binary)
        return super().stop_service(binary, sig)

    def start_service(self, binary):
        """Start one service (again)."""
        self._stopped.discard(binary)
        return super().start_service(binary)

    def _check_running(self):
        for binary, process in self.processes.items():
            if binary not in self._stopped and not process.alive():
                raise stack_mod.EnvironmentFailure('%s exited:\n%s' % (
                    binary, process.log_tail()))

    def wait_for(self, predicate, timeout=WAIT_TIMEOUT, what='condition'):
        """Poll ``predicate`` until true; fail with the services' output.
        """
        deadline = time.monotonic() + timeout
        while True:
            self._check_running()
            try:
                value = predicate()
            except scheduler_env.EnvironmentFailure:
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise stack_mod.EnvironmentFailure(
                    '%s not met within %ds:\n%s' % (what, timeout,
                                                    self.log_tails()))
            time.sleep(0.5)

    # --- what the agent wrote --------------------------------------------

    def _rows(self, table, *where):
        with self._cell.engine().connect() as conn:
            return [row._asdict() for row in conn.execute(
                sa.select(table).where(table.c.deleted == 0, *where))]

    def compute_nodes(self):
        """Live compute_nodes rows, JSON columns decoded."""
        rows = self._rows(cell_tables.compute_nodes)
        for row in rows:
            for key in ('numa_topology', 'stats', 'pci_stats', 'cpu_info'):
                if row[key]:
                    row[key] = json.loads(row[key])
        return {row['host']: row for row in rows}

    def services(self, binary='berth-compute'):
        """Live service rows of ``binary`` by host."""
        return {row['host']: row for row in self._rows(
            cell_tables.services, cell_tables.services.c.binary == binary)}

    def tree(self, root_uuid):
        """{provider name: provider} of a root's tree in placement."""
        body = self.placement.request(
            'GET', '/resource_providers?in_tree=%s' % root_uuid)
        return {rp['name']: rp for rp in body['resource_providers']}

    def inventories(self, provider_uuid):
        """The provider's inventories and generation."""
        return self.placement.request(
            'GET', '/resource_providers/%s/inventories' % provider_uuid)

    def traits(self, provider_uuid):
        """The provider's traits."""
        return set(self.placement.request(
            'GET', '/resource_providers/%s/traits' % provider_uuid)['traits'])

    def add_instance(self, host, vcpus=1, memory_mb=256):
        """An ACTIVE instance row on ``host`` (as a finished build leaves).
        """
        inst = instance_obj.Instance(
            uuid=str(uuid.uuid4()), project_id='p', user_id='u', host=host,
            node=host, vm_state=instance_obj.ACTIVE,
            power_state=instance_obj.RUNNING,
            flavor=flavor_obj.Flavor(name='f', flavorid='f', vcpus=vcpus,
                                     memory_mb=memory_mb, root_gb=1),
            launched_at=timeutils.utcnow().isoformat())
        instance_records.create_instance(context.get_admin_context(),
                                         self._cell, inst)
        return inst

    def destroy_instance(self, uuid_):
        """Soft-delete an instance row behind the agent's back."""
        instance_records.destroy_instance(context.get_admin_context(),
                                          self._cell, uuid_)

    def process(self, binary):
        """The ServiceProcess of ``binary``."""
        return self._process(binary)
