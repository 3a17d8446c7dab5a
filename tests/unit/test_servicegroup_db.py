# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Service records and heartbeats in the cell database."""

import datetime

from oslo_utils import timeutils
import pytest

from common.conf import CONF
from common.db import cells
from common import exception
from common import servicegroup
from common import servicegroup_db


@pytest.fixture
def api(tmp_path):
    database = cells.database_for_url(
        'cell test', 'sqlite:///%s' % (tmp_path / 'cell.sqlite'), CONF)
    cells.sync_cell(database)
    yield servicegroup.API(servicegroup_db.DatabaseDriver(database))
    database.dispose()


def test_join_is_idempotent_and_heartbeats_count(api):
    first = api.join('host1', 'berth-scheduler', 'scheduler')
    again = api.join('host1', 'berth-scheduler', 'scheduler')
    assert (first.host, first.binary, first.report_count) == (
        again.host, again.binary, 0)
    api.report('host1', 'berth-scheduler')
    record = api.report('host1', 'berth-scheduler')
    assert record.report_count == 2
    assert api.service_is_up(record)


def test_forced_down_and_stale_services_are_down(api):
    api.join('host1', 'berth-compute', 'compute')
    record = api.report('host1', 'berth-compute')
    assert api.service_is_up(record)
    forced = api.update('host1', 'berth-compute', forced_down=True)
    assert not api.service_is_up(forced)
    stale = api.update('host1', 'berth-compute', forced_down=False)
    stale.updated_at = timeutils.utcnow() - datetime.timedelta(
        seconds=CONF.service_down_time + 5)
    assert not api.service_is_up(stale)


def test_admin_changes_are_not_heartbeats(api):
    api.join('host1', 'berth-compute', 'compute')
    disabled = api.update('host1', 'berth-compute', disabled=True,
                          disabled_reason='maintenance')
    assert disabled.disabled and disabled.disabled_reason == 'maintenance'
    # Never reported: its liveness is its creation time, not the update.
    assert disabled.updated_at == disabled.created_at


def test_unknown_service_and_listing(api):
    with pytest.raises(exception.ServiceNotFound):
        api.report('nowhere', 'berth-compute')
    api.join('b-host', 'berth-compute', 'compute')
    api.join('a-host', 'berth-compute', 'compute')
    api.join('a-host', 'berth-scheduler', 'scheduler')
    assert [r.host for r in api.get_all('berth-compute')] == ['a-host',
                                                              'b-host']
    assert len(api.get_all()) == 3
    with pytest.raises(ValueError):
        api.update('a-host', 'berth-compute', report_count=9)
