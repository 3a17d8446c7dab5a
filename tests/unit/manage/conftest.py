# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Fixtures: berth-manage commands in-process against a test World.

The commands take the parsed ConfigOpts; tests give them a stand-in whose
``category`` holds the command's arguments and which reads everything
else from the global CONF. The api database and the placement client are
the World's (each command module looks them up through ``_api`` and
``_placement``, which the ``manage`` fixture replaces).
"""

import argparse

import pytest

from common.conf import CONF
from tests.unit.conductor import fakes


class Conf(object):
    """CONF with a command's arguments in ``category``."""

    def __init__(self, category, **args):
        self.category = argparse.Namespace(name=category, **args)

    def __getattr__(self, name):
        return getattr(CONF, name)


@pytest.fixture
def world(tmp_path):
    world = fakes.World(tmp_path)
    yield world
    world.close()


@pytest.fixture
def manage(world, monkeypatch):
    """``manage(module, function, category, **args)`` -> exit code."""
    from services.manage import cell_admin
    from services.manage import cell_v2
    from services.manage import placement_audit
    from services.manage import placement_heal
    from services.manage import scheduler
    for module in (cell_admin, cell_v2, placement_audit, placement_heal,
                   scheduler):
        monkeypatch.setattr(module, '_api', lambda conf: world.api)
    for module in (placement_audit, placement_heal):
        monkeypatch.setattr(module, '_placement',
                            lambda conf: world.placement)

    def run(function, category, **args):
        return function(Conf(category, **args))
    return run
