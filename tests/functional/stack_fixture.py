# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Set up a whole-deployment :class:`stack.Stack` for a pytest module."""

import contextlib

import pytest

from tests.functional.placement import conftest as db_helpers
from tests.functional import placement_server
from tests.functional import rabbit
from tests.functional import scheduler_env
from tests.functional import skips
from tests.functional import stack as stack_mod


def database_server(servers, kind):
    """The session's DatabaseServer of ``kind``; skip or fail if down."""
    if kind not in servers:
        server = db_helpers.DatabaseServer(kind)
        try:
            server.check()
        except Exception as exc:
            skips.unavailable('%s server at %s is unreachable: %s' % (
                kind, server.base_url, str(exc).splitlines()[0]))
        servers[kind] = server
    return servers[kind]


@contextlib.contextmanager
def deployed(database_servers, kind, workdir, seed=None,
             stack_class=stack_mod.Stack, **kwargs):
    """A started Stack on ``kind``'s server, stopped on exit.

    The broker is held shared for the stack's life: tests that restart
    RabbitMQ take it exclusively, and a restart would drop the stack's
    in-flight calls. A missing server skips (fails in CI); a stack that
    does not come up fails with its services' logs.

    :param seed: ``seed(stack)``, run once the stack is up.
    :param stack_class: :class:`stack.Stack` or a subclass of it.
    :param kwargs: for :class:`stack.Stack` (hosts, extra_conf...).
    """
    rabbit.check()
    server = database_server(database_servers, kind)
    with rabbit.broker_lock():
        deployment = stack_class(server.create, kind=kind, workdir=workdir,
                                 **kwargs)
        try:
            deployment.setup()
            deployment.start()
            if seed is not None:
                seed(deployment)
        except scheduler_env.EnvironmentUnavailable as exc:
            deployment.stop()
            skips.unavailable(str(exc))
        except (scheduler_env.EnvironmentFailure,
                placement_server.ServerError) as exc:
            deployment.stop()
            pytest.fail('%s\n%s' % (exc, deployment.log_tails()),
                        pytrace=False)
        except BaseException:
            deployment.stop()
            raise
        try:
            yield deployment
        finally:
            deployment.stop()
