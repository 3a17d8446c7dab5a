# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Compute clients per cell: the default transport, or the cell's own."""

import oslo_messaging as messaging
import pytest

from common import cell_rpc
from common.conf import CONF
from common.db import cells
from common import rpc

RABBIT = 'rabbit://u:p@192.0.2.10:5672/cell2'


class _Compute(object):
    """A compute API whose client is a real oslo.messaging client."""

    def __init__(self):
        self.client = rpc.get_client(
            messaging.Target(topic='compute', version='1.0'),
            version_cap='1.0')


@pytest.fixture
def fake_rpc():
    rpc.register_opts(CONF)
    CONF.set_override('transport_url', 'fake:///')
    rpc.init(CONF)
    yield
    rpc.cleanup()
    CONF.clear_override('transport_url')


def _cell(url):
    return cells.CellMapping(id=2, uuid='c2', name='cell2',
                             transport_url=url, database_connection='x')


@pytest.mark.parametrize('url,default', [
    (None, True), ('none:///', True), ('fake://', True),
    ('fake:///', True), (RABBIT, False)])
def test_which_cells_share_the_default_transport(fake_rpc, url, default):
    assert cell_rpc.uses_default_transport(url) is default


def test_a_cell_with_its_own_queue_gets_its_own_client(fake_rpc):
    clients = cell_rpc.CellClients(_Compute)
    default = clients.for_cell(None)
    assert clients.for_cell(_cell('none:///')) is default
    own = clients.for_cell(_cell(RABBIT))
    assert own is not default and clients.for_cell(_cell(RABBIT)) is own
    assert own.client.transport is not default.client.transport
    assert own.client.target.topic == 'compute'
    assert own.client.version_cap == '1.0'
    clients.cleanup()
