# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Fixtures of the compute agent's unit tests."""

import pytest

from common import conf as common_conf
from common.placement import client as placement_client
from services.compute import agent as agent_mod
from services.compute import report
from services.compute.virt import fake
from tests.unit.compute import fakes
from tests.unit.placement import fixtures as placement_fixtures


class ConfOverrides(object):
    """Overrides on the global CONF, all cleared by :meth:`clear`.

    NOTE: oslo.config's fixture needs the ``fixtures`` package, which the
    test environment does not carry; this is the part of it tests use.
    """

    def __init__(self, conf):
        self.conf = conf
        self._set = []

    def config(self, group=None, **values):
        """Override options of ``group`` (None: [DEFAULT])."""
        for name, value in values.items():
            self.conf.set_override(name, value, group=group)
            self._set.append((name, group))

    def clear(self):
        """Drop every override made here."""
        for name, group in reversed(self._set):
            self.conf.clear_override(name, group=group)
        self._set = []


@pytest.fixture
def conf():
    """The global CONF with overrides that are cleared afterwards."""
    overrides = ConfOverrides(common_conf.CONF)
    overrides.config(host='cn', update_resources_interval=-1)
    # NOTE: records saved at once: tests read them right after a build
    # (test_record_saver.py covers the batched saves).
    overrides.config(group='compute', orphan_allocation_grace_period=0,
                     record_save_delay=0)
    overrides.config(group='fake_driver', vcpus=8, memory_mb=8192,
                     disk_gb=100)
    yield overrides
    overrides.clear()


@pytest.fixture
def placement():
    """The real placement app in-process on an emptied SQLite database."""
    app = placement_fixtures.setup_app()
    placement_fixtures.wipe_database()
    return fakes.WsgiAdapter(app)


@pytest.fixture
def make_agent(conf, placement):
    """Factory: an agent on the fake driver with fake conductor/scheduler.
    """
    made = []

    def _make(**options):
        for group, values in options.items():
            conf.config(group=None if group == 'DEFAULT' else group,
                        **values)
        conductor = fakes.FakeConductor()
        scheduler = fakes.FakeScheduler()
        client = placement_client.PlacementClient(conf.conf,
                                                  adapter=placement)
        reporter = report.ReportClient(client, refresh=300)
        agent = agent_mod.ComputeAgent(
            conf.conf, fake.FakeDriver(conf.conf), conductor, reporter,
            scheduler=scheduler, wait_for_conductor=False)
        made.append(agent)
        return agent
    yield _make
    for agent in made:
        agent.stop()
