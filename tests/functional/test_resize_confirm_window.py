# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``[DEFAULT] resize_confirm_window``: a move nobody confirms is
confirmed by the service.

Every service runs as its own process (tests/functional/stack.py) on the
real RabbitMQ and MariaDB, two simulated hosts, with a window of two
seconds and a resource update every two seconds (the destination's
compute looks for expired moves among the migrations its last update
read). A stack of its own: the window would confirm the moves the other
modules leave in VERIFY_RESIZE to check.
"""

import pytest

from tests.functional import moves_helpers as moves
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack as stack_mod
from tests.functional import stack_fixture

HOSTS = ('stack-host0', 'stack-host1')


@pytest.fixture(scope='module')
def cloud(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('confirm-window')),
            hosts=len(HOSTS),
            extra_conf={('DEFAULT', 'resize_confirm_window'): 2,
                        ('DEFAULT', 'update_resources_interval'): 2}
    ) as deployment:
        moves.add_tiny_and_small(deployment)
        yield deployment


def test_a_resize_left_in_verify_resize_is_confirmed(cloud):
    server = moves.boot(cloud, cloud.tiny, cloud.image, HOSTS[0],
                        'unconfirmed')
    try:
        status, body = moves.action(cloud, server, {'resize': {
            'flavorRef': cloud.small}})
        assert status == 202, body
        migration = moves.wait_for_migration(
            cloud, server, ('confirmed', 'error'), timeout=60)
        assert migration['status'] == 'confirmed'
        shown = moves.wait(cloud, server, 'ACTIVE')
        assert stack_mod.host_of(shown) == HOSTS[1]
        assert shown['flavor']['vcpus'] == 2
        # NOTE: as Nova shows it, a confirm action of its own.
        assert moves.actions(cloud, server) == [
            'confirmResize', 'resize', 'create']
        assert ('compute_confirm_resize', 'Success', HOSTS[0]) in (
            moves.events(cloud, server, 'confirmResize'))
        moves.assert_placement_matches_servers(cloud)
        moves.assert_audit_clean(cloud)
    finally:
        cloud.compute.delete_server(server)
    moves.assert_placement_matches_servers(cloud)
