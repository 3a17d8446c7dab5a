# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Fixtures shared by the functional tests."""

from oslo_config import cfg
import pytest

from common import rpc
from tests.functional import rabbit
from tests.functional import scheduler_env
from tests.functional import skips


@pytest.fixture
def vhost():
    """A RabbitMQ virtual host of this test, deleted afterwards."""
    rabbit.check()
    with rabbit.broker_lock():
        made = scheduler_env.RabbitVhost()
        try:
            made.create()
        except scheduler_env.EnvironmentUnavailable as exc:
            skips.unavailable(str(exc))
        try:
            yield made
        finally:
            made.delete()


@pytest.fixture
def vhost_rpc(vhost):
    """This process's RPC transport on the test's virtual host.

    For a test that calls or serves RPC itself; cleaned up afterwards.
    """
    conf = cfg.ConfigOpts()
    rpc.register_opts(conf)
    conf([])
    conf.set_override('transport_url', vhost.url)
    conf.set_override('rpc_response_timeout', 30)
    rpc.init(conf)
    try:
        yield vhost
    finally:
        rpc.cleanup()
