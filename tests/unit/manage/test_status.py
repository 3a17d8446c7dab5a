# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""berth-status upgrade check: each check's result and the exit code."""

import json

from alembic import command as alembic_command
import pytest
import sqlalchemy as sa

from common.conf import CONF
from common.db import api_tables
from common.db import cells
from common.db import compute_records
from common.placement import client as placement_client
from services.manage import status
from tests.unit.db import records_fixtures as fx

Code = status.Code


class FakePlacement(object):
    """Answers GET / with a version document (or fails)."""

    def __init__(self, max_version='1.39', status_code=200, error=None):
        self.max_version = max_version
        self.status_code = status_code
        self.error = error
        self.calls = []

    def request(self, method, url, version, timeout=None):
        self.calls.append((method, url, timeout))
        if self.error:
            raise self.error
        body = {'versions': [{'id': 'v1.0', 'min_version': '1.0',
                              'max_version': self.max_version}]}
        return placement_client.Response(self.status_code, body, {})


def _stamp(database, migrations):
    with database.engine().begin() as connection:
        cfg = cells._alembic_config(migrations, connection)
        alembic_command.stamp(cfg, 'head')


@pytest.fixture
def placement_db(tmp_path):
    return fx.make_database(tmp_path, 'placement', sa.MetaData())


@pytest.fixture
def checks(world, placement_db, override):
    override('connection', None, group='database')
    placement = FakePlacement()
    made = status.Checks(CONF, placement=placement, api=world.api,
                         registry=world.registry,
                         placement_database=placement_db)
    made.fake_placement = placement
    return made


def _stamp_all(world, placement_db):
    _stamp(world.api, cells.API_MIGRATIONS)
    for database in (world.cell0, world.cell1):
        _stamp(database, cells.CELL_MIGRATIONS)
    _stamp(placement_db, status.PLACEMENT_MIGRATIONS)


def test_schemas_behind_then_at_head(checks, world, placement_db):
    result = checks._check_schemas()
    assert result.code == Code.FAILURE
    assert 'api is at None, not %s' % status.head_revision(
        cells.API_MIGRATIONS) in result.details
    assert 'cell1' in result.details and 'placement is at None' in \
        result.details
    _stamp_all(world, placement_db)
    assert checks._check_schemas().code == Code.SUCCESS


def test_cells_need_cell0_and_one_more(checks, world):
    assert checks._check_cells().code == Code.SUCCESS

    def delete(ctx):
        ctx.session.execute(api_tables.host_mappings.delete())
        ctx.session.execute(api_tables.cell_mappings.delete().where(
            api_tables.cell_mappings.c.uuid != cells.CELL0_UUID))
    world.api.writer(delete)(fx.ctxt())
    result = checks._check_cells()
    assert result.code == Code.FAILURE
    assert 'at least two cell mappings' in result.details
    assert 'simple_cell_setup' in result.details


def test_cells_without_cell0(checks, world):
    def delete(ctx):
        ctx.session.execute(api_tables.cell_mappings.delete().where(
            api_tables.cell_mappings.c.uuid == cells.CELL0_UUID))
    world.api.writer(delete)(fx.ctxt())
    fx.map_cell(world.api, 'c2c2c2c2-0000-4000-8000-000000000002', 'cell2',
                world.cell1)
    result = checks._check_cells()
    assert result.code == Code.FAILURE
    assert 'No cell0 mapping found' in result.details


def test_unmapped_computes_warn_and_none_mapped_fails(checks, world):
    assert checks._check_computes_mapped().code == Code.SUCCESS
    compute_records.save_compute_node(fx.ctxt(), world.cell1, 'h4', 'h4',
                                      {})
    result = checks._check_computes_mapped()
    assert result.code == Code.WARNING
    assert 'h4' in result.details and 'h1' not in result.details
    world.api.writer(lambda ctx: ctx.session.execute(
        api_tables.host_mappings.delete()))(fx.ctxt())
    result = checks._check_computes_mapped()
    assert result.code == Code.FAILURE
    assert 'No host mappings found but there are compute nodes' in \
        result.details


def test_placement_version_reachability_and_credentials(checks):
    needed = status.needed_placement_version()
    assert needed == '1.39'
    assert checks._check_placement().code == Code.SUCCESS
    assert checks.fake_placement.calls == [
        ('GET', '/', status.PLACEMENT_TIMEOUT)]
    checks.fake_placement.max_version = '1.36'
    result = checks._check_placement()
    assert (result.code, result.details) == (
        Code.FAILURE, 'Placement API version 1.39 needed, you have 1.36.')
    checks.fake_placement.status_code = 401
    assert checks._check_placement().details == \
        'Placement service credentials do not work.'
    checks.fake_placement.error = placement_client.PlacementUnavailable(
        'GET / failed: connection refused')
    result = checks._check_placement()
    assert result.code == Code.FAILURE
    assert 'not reachable: GET / failed: connection refused' in \
        result.details


def test_policy_file(checks, tmp_path, override):
    override('policy_file', str(tmp_path / 'absent.yaml'),
             group='oslo_policy')
    assert checks._check_policy().code == Code.SUCCESS
    good = tmp_path / 'policy.yaml'
    good.write_text('"os_compute_api:servers:index": '
                    '"rule:context_is_admin"\n')
    override('policy_file', str(good), group='oslo_policy')
    assert checks._check_policy().code == Code.SUCCESS
    assert checks._check_policy_json().code == Code.SUCCESS
    bad = tmp_path / 'bad.yaml'
    bad.write_text('"os_compute_api:servers:index": "rule:no_such_rule"\n')
    override('policy_file', str(bad), group='oslo_policy')
    result = checks._check_policy()
    assert result.code == Code.FAILURE and 'undefined' in result.details
    broken = tmp_path / 'broken.yaml'
    broken.write_text('"a": [unclosed\n')
    override('policy_file', str(broken), group='oslo_policy')
    result = checks._check_policy()
    assert result.code == Code.FAILURE and 'cannot be read' in \
        result.details
    as_json = tmp_path / 'policy.json'
    as_json.write_text(json.dumps({'os_compute_api:servers:index': ''}))
    override('policy_file', str(as_json), group='oslo_policy')
    assert checks._check_policy_json().code == Code.FAILURE


def test_check_prints_the_table_and_returns_the_worst(checks, world,
                                                      placement_db, capsys,
                                                      override, tmp_path):
    override('policy_file', str(tmp_path / 'absent.yaml'),
             group='oslo_policy')
    _stamp_all(world, placement_db)
    assert checks.check() == Code.SUCCESS
    table = capsys.readouterr().out
    assert '| Upgrade Check Results' in table
    for name in ('Database schemas', 'Cells v2', 'Compute hosts mapped',
                 'Placement API', 'Policy File'):
        assert '| Check: %s' % name in table
    assert 'Result: Failure' not in table
    compute_records.save_compute_node(fx.ctxt(), world.cell1, 'h9', 'h9',
                                      {})
    assert checks.check() == Code.WARNING
    checks.fake_placement.max_version = '1.10'
    assert checks.check() == Code.FAILURE
    assert 'Placement API version 1.39 needed' in capsys.readouterr().out
