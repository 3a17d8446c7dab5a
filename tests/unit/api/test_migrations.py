# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""GET /os-migrations and GET /servers/{id}/migrations[/{id}]."""

import datetime
import uuid

import pytest
import sqlalchemy as sa

from common import context
from common.db import api_tables
from common.db import cell_tables
from common.db import cells
from common.db import migration_records
from common.objects import flavor as flavor_obj
from common.objects import migration as migration_obj
from services.api import cell_hosts
from services.api import down_cells
from tests.unit.api import helpers
from tests.unit.api.helpers import V

CELL2_UUID = '432015b0-14e9-4e81-96eb-2ec36d79773b'
DAY = datetime.datetime(2026, 3, 1)


def _database(world, cell):
    return cells.get_cell_database(world.urls[cell])


def add_migration(world, cell='cell1', hours=0, updated_hours=None,
                  **values):
    """A migration row created ``hours`` after DAY (of a new server of
    ``cell`` unless ``instance_uuid`` names one); returns it.
    """
    fields = dict(source_compute='h1',
                  source_node='n1', dest_compute='h2', dest_node='n2',
                  status=migration_obj.FINISHED, project_id='projA',
                  user_id='alice',
                  old_flavor=flavor_obj.Flavor(flavorid='f1', name='f1'),
                  new_flavor=flavor_obj.Flavor(flavorid='f2', name='f2'))
    fields.update(values)
    if 'instance_uuid' not in fields:
        fields['instance_uuid'] = world.add_instance(cell)
    made = migration_records.create_migration(
        context.get_admin_context(), _database(world, cell),
        migration_obj.Migration(**fields))
    table = cell_tables.migrations
    updated = (None if updated_hours is None
               else DAY + datetime.timedelta(hours=updated_hours))
    with _database(world, cell).engine().begin() as conn:
        conn.execute(table.update().where(table.c.uuid == made.uuid).values(
            created_at=DAY + datetime.timedelta(hours=hours),
            updated_at=updated))
    return migration_records.get_migration(
        context.get_admin_context(), _database(world, cell), made.uuid)


def add_cell2(world, tmp_path):
    world.urls['cell2'] = 'sqlite:///%s' % (tmp_path / 'cell2.sqlite')
    engine = sa.create_engine(world.urls['cell2'])
    cell_tables.metadata.create_all(engine)
    engine.dispose()
    world.cell_ids['cell2'] = world.insert(
        'api', api_tables.cell_mappings, uuid=CELL2_UUID, name='cell2',
        transport_url='none:///', database_connection=world.urls['cell2'],
        disabled=False)
    cell_hosts.forget_cells()


def _list(world, query='', version='2.80', token='admin'):
    status, body, _r = world.client.get(V + '/os-migrations' + query,
                                        version=version, token=token)
    return status, body


def _uuids(body):
    return [m['uuid'] for m in body['migrations']]


@pytest.fixture
def five(world, tmp_path):
    """Five migrations in two cells (m1 oldest), a hidden one, flavors."""
    flavor_id = helpers.make_flavor(world.client, name='f1')
    add_cell2(world, tmp_path)
    made = {
        'm1': add_migration(world, hours=1, migration_type='migration',
                            status='confirmed',
                            old_flavor=flavor_obj.Flavor(flavorid=flavor_id)),
        'm2': add_migration(world, 'cell2', hours=2,
                            migration_type='resize', source_compute='h3',
                            updated_hours=30, user_id='bob'),
        'm3': add_migration(world, hours=3,
                            migration_type='live-migration',
                            status='running', dest_compute='h3',
                            project_id='projB'),
        'm4': add_migration(world, 'cell2', hours=4,
                            migration_type='evacuation', status='done',
                            source_compute='h4', dest_compute='h5'),
        'm5': add_migration(world, hours=5, hidden=True),
    }
    return {name: m.uuid for name, m in made.items()}


def _names(five, body):
    names = {u: n for n, u in five.items()}
    return [names[m['uuid']] for m in body['migrations']]


def test_list_spans_cells_newest_first_without_hidden(world, five):
    status, body = _list(world)
    assert status == 200, body
    assert _names(five, body) == ['m4', 'm3', 'm2', 'm1']
    live = body['migrations'][1]
    assert live['migration_type'] == 'live-migration'
    assert live['user_id'] == 'alice' and live['project_id'] == 'projB'
    assert live['created_at'] == '2026-03-01T03:00:00.000000'
    assert live['updated_at'] is None
    assert live['links'][0]['href'].endswith(
        '/v2.1/servers/%s/migrations/%d' % (live['instance_uuid'],
                                            live['id']))
    # Only an in-progress live migration links to its server's migrations.
    assert 'links' not in body['migrations'][0]
    # The flavors' ids: f1 exists (made by the fixture), f2 does not.
    first = body['migrations'][3]
    assert isinstance(first['old_instance_type_id'], int)
    assert first['new_instance_type_id'] is None
    assert set(first) >= {'id', 'status', 'instance_uuid', 'source_compute',
                          'source_node', 'dest_compute', 'dest_node',
                          'dest_host', 'created_at', 'updated_at'}


FIELDS = [
    ('2.1', set(), {'migration_type', 'links', 'uuid', 'user_id',
                    'project_id'}),
    ('2.23', {'migration_type'}, {'uuid', 'user_id', 'project_id'}),
    ('2.59', {'migration_type', 'uuid'}, {'user_id', 'project_id'}),
    ('2.80', {'migration_type', 'uuid', 'user_id', 'project_id'}, set()),
]


def test_fields_per_microversion(world, five):
    for version, present, absent in FIELDS:
        status, body = _list(world, version=version)
        assert status == 200
        keys = set(body['migrations'][0])
        assert present <= keys and not absent & keys, version
        assert len(body['migrations']) == 4
        assert 'migrations_links' not in body


FILTERS = [
    ('?host=h1', ['m3', 'm1']),
    ('?host=h3', ['m3', 'm2']),
    ('?source_compute=h4', ['m4']),
    ('?status=running', ['m3']),
    ('?status=done&status=running', ['m3']),
    ('?migration_type=resize', ['m2']),
    ('?changes-since=2026-03-01T03:00:00Z', ['m4', 'm3', 'm2']),
    ('?changes-before=2026-03-01T02:30:00Z', ['m1']),
    ('?changes-since=2026-03-01T02:00:00Z&'
     'changes-before=2026-03-01T05:00:00Z', ['m4', 'm3']),
    ('?user_id=bob', ['m2']),
    ('?project_id=projB', ['m3']),
    ('?hidden=0', ['m4', 'm3', 'm2', 'm1']),
    ('?hidden=1', []),
]


def test_filters(world, five):
    for query, expected in FILTERS:
        status, body = _list(world, query)
        assert status == 200, body
        assert _names(five, body) == expected, query


def test_instance_uuid_filter(world, five):
    status, body = _list(world)
    instance = body['migrations'][0]['instance_uuid']
    status, body = _list(world, '?instance_uuid=' + instance)
    assert _names(five, body) == ['m4']


def test_the_migrations_of_a_deleted_server_are_not_listed(world, five):
    # NOTE: Nova's delete soft-deletes a server's migrations.
    status, body = _list(world, '?status=running')
    [instance] = [m['instance_uuid'] for m in body['migrations']]
    table = cell_tables.instances
    with _database(world, 'cell1').engine().begin() as conn:
        conn.execute(table.update().where(table.c.uuid == instance).values(
            deleted=table.c.id))
    status, body = _list(world)
    assert _names(five, body) == ['m4', 'm2', 'm1']
    status, body = _list(world, '?instance_uuid=' + instance)
    assert body == {'migrations': []}


def test_paging_across_cells(world, five):
    status, body = _list(
        world, '?limit=3&host=h1&status=done&status=confirmed')
    assert _names(five, body) == ['m1']
    status, body = _list(world, '?limit=2')
    assert _names(five, body) == ['m4', 'm3']
    href = body['migrations_links'][0]['href']
    assert body['migrations_links'][0]['rel'] == 'next'
    assert 'limit=2' in href and 'marker=%s' % five['m3'] in href
    status, body = _list(world, '?limit=2&marker=' + five['m3'])
    assert _names(five, body) == ['m2', 'm1']
    status, body = _list(world, '?limit=2&marker=' + five['m1'])
    assert body == {'migrations': []}
    status, body = _list(world, '?limit=0')
    assert body == {'migrations': []}


def test_page_size_is_capped_by_max_limit(world, five, override):
    override('max_limit', 3, group='api')
    status, body = _list(world, '?limit=10')
    assert _names(five, body) == ['m4', 'm3', 'm2']
    assert 'marker=%s' % five['m2'] in body['migrations_links'][0]['href']
    status, body = _list(world)
    assert len(body['migrations']) == 3


def test_bad_marker(world, five):
    status, body = _list(world, '?marker=nope')
    assert status == 400
    assert body['badRequest']['message'] == 'Marker nope could not be found.'


BAD_QUERIES = [
    ('?limit=-1', '2.59', 'limit'),
    ('?limit=x', '2.59', 'limit'),
    ('?limit=1&limit=2', '2.59', 'limit'),
    ('?changes-since=yesterday', '2.59', "'yesterday' is not a 'date-time'"),
    ('?changes-before=2026-03-01T00:00:00Z', '2.65',
     "('changes-before' was unexpected)"),
    ('?user_id=bob', '2.79', "('user_id' was unexpected)"),
    ('?foo=bar', '2.59', "Additional properties are not allowed ('foo' "
     "was unexpected)"),
    ('?changes-since=2026-03-02T00:00:00Z&'
     'changes-before=2026-03-01T00:00:00Z', '2.66',
     'The value of changes-since must be less than or equal to '
     'changes-before.'),
]


def test_bad_queries(world, five):
    for query, version, fragment in BAD_QUERIES:
        status, body = _list(world, query, version=version)
        assert status == 400, (query, body)
        assert fragment in body['badRequest']['message'], query


def test_below_259_paging_and_unknown_parameters_are_ignored(world, five):
    status, body = _list(world, '?limit=1&marker=nope&foo=bar&'
                         'changes-since=2030-01-01T00:00:00Z&user_id=bob',
                         version='2.58')
    assert status == 200, body
    assert len(body['migrations']) == 4


def test_a_down_cell_is_left_out(world, five, monkeypatch):
    real = down_cells.known_down
    monkeypatch.setattr(down_cells, 'known_down',
                        lambda cell: cell.uuid == CELL2_UUID or real(cell))
    status, body = _list(world)
    assert status == 200
    assert _names(five, body) == ['m3', 'm1']


def test_list_is_admin_only(world, five):
    status, body = _list(world, token='alice:projA')
    assert status == 403
    assert 'os-migrations:index' in body['forbidden']['message']


# ------------------------------------------------ /servers/{id}/migrations

@pytest.fixture
def server(world):
    world.add_host('h1')
    return world.add_instance('cell1', host='h1', project_id='projA')


def _server_get(world, path, version='2.80', token='admin'):
    status, body, _r = world.client.get(V + '/servers/' + path,
                                        version=version, token=token)
    return status, body


def test_server_lists_its_live_migrations_in_progress(world, server):
    running = add_migration(world, instance_uuid=server, hours=2,
                            migration_type='live-migration',
                            status='running', memory_total=1000,
                            memory_processed=400, memory_remaining=600)
    queued = add_migration(world, instance_uuid=server, hours=3,
                           migration_type='live-migration',
                           status='queued')
    for values in (dict(migration_type='live-migration', status='accepted'),
                   dict(migration_type='live-migration',
                        status='completed'),
                   dict(migration_type='resize', status='finished'),
                   dict(migration_type='live-migration', status='running',
                        instance_uuid=str(uuid.uuid4()))):
        values.setdefault('instance_uuid', server)
        add_migration(world, **values)
    status, body = _server_get(world, server + '/migrations')
    assert status == 200, body
    assert [m['id'] for m in body['migrations']] == [queued.id, running.id]
    shown = body['migrations'][1]
    assert shown['server_uuid'] == server and shown['uuid'] == running.uuid
    assert (shown['memory_total_bytes'], shown['memory_processed_bytes'],
            shown['memory_remaining_bytes']) == (1000, 400, 600)
    assert shown['disk_total_bytes'] is None
    assert (shown['source_compute'], shown['dest_node']) == ('h1', 'n2')
    assert (shown['user_id'], shown['project_id']) == ('alice', 'projA')
    status, body = _server_get(world, server + '/migrations',
                               version='2.58')
    assert not {'uuid', 'user_id'} & set(body['migrations'][0])


def test_server_migrations_need_223(world, server):
    status, body = _server_get(world, server + '/migrations',
                               version='2.22')
    assert status == 404


def test_server_migration_show(world, server):
    running = add_migration(world, instance_uuid=server,
                            migration_type='live-migration',
                            status='running')
    status, body = _server_get(
        world, '%s/migrations/%d' % (server, running.id))
    assert status == 200, body
    assert body['migration']['id'] == running.id
    assert body['migration']['server_uuid'] == server
    status, body = _server_get(world, '%s/migrations/%d' % (
        server, running.id), version='2.59')
    assert 'user_id' not in body['migration']
    assert body['migration']['uuid'] == running.uuid


def test_server_migration_show_not_found(world, server):
    resize = add_migration(world, instance_uuid=server,
                           migration_type='resize')
    done = add_migration(world, instance_uuid=server,
                         migration_type='live-migration',
                         status='completed')
    theirs = add_migration(world, migration_type='live-migration',
                           status='running')
    for mid, message in (
            (resize.id, 'Migration %d for server %s is not '
             'live-migration.' % (resize.id, server)),
            (done.id, 'Live migration %d for server %s is not in '
             'progress.' % (done.id, server)),
            (theirs.id, 'In-progress live migration %d is not found for '
             'server %s.' % (theirs.id, server)),
            ('abc', 'In-progress live migration abc is not found for '
             'server %s.' % server)):
        status, body = _server_get(
            world, '%s/migrations/%s' % (server, mid))
        assert status == 404, (mid, body)
        assert body['itemNotFound']['message'] == message
    status, body = _server_get(world, '%s/migrations/1' % uuid.uuid4())
    assert status == 404
    assert 'could not be found' in body['itemNotFound']['message']


def test_server_migrations_are_admin_only(world, server):
    for path in ('/migrations', '/migrations/1'):
        status, body = _server_get(world, server + path,
                                   token='alice:projA')
        assert status == 403, (path, body)


def test_write_methods_of_another_module_sit_beside_the_gets(monkeypatch):
    from services.api import handler
    routes = {path: dict(methods)
              for path, methods in handler.ROUTE_DECLARATIONS.items()}
    monkeypatch.setattr(handler, 'ROUTE_DECLARATIONS', routes)
    path = '/servers/{server_id}/migrations/{migration_id}'

    def abort(req):
        pass
    handler.add_routes({path: {'DELETE': abort}})
    assert set(routes[path]) == {'GET', 'DELETE'}
    assert routes[path]['DELETE'] is abort
