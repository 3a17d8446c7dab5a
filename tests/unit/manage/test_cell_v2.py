# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""berth-manage cell_v2: cells, host discovery, mappings, exit codes."""

import os
import subprocess
import sys

from common.conf import CONF
from common.db import boot_records
from common.db import cells
from common.db import compute_records
from common.db import instance_records
from common import rpc
from services.conductor import build_flow
from services.manage import cell_v2
from tests.unit.conductor import fakes
from tests.unit.db import records_fixtures as fx

CELL1 = fakes.CELL1_UUID


def test_map_cell0_is_idempotent(manage, capsys):
    assert manage(cell_v2.map_cell0, 'cell_v2',
                  database_connection=None) == 0
    assert capsys.readouterr().out == 'Cell0 is already setup\n'


def test_create_cell_and_duplicates(manage, world, capsys):
    args = dict(cell_name='cell2', transport_url='rabbit://u:pw@h1:5672/',
                database_connection='sqlite:////nowhere/cell2.sqlite',
                disabled=True, verbose=True)
    assert manage(cell_v2.create_cell, 'cell_v2', **args) == 0
    uuid = capsys.readouterr().out.strip()
    cell = boot_records.get_cell(fx.ctxt(), uuid, database=world.api)
    assert (cell.name, cell.disabled) == ('cell2', True)
    assert manage(cell_v2.create_cell, 'cell_v2', **args) == 2
    assert 'already exists for another cell with uuid %s' % uuid in \
        capsys.readouterr().out
    assert manage(cell_v2.list_cells, 'cell_v2', verbose=False) == 0
    table = capsys.readouterr().out
    assert 'rabbit://u:****@h1:5672/' in table and 'pw' not in table
    assert '| cell2 |' in table.replace('  ', ' ')


def test_transport_url_is_required(manage, capsys):
    rpc.register_opts(CONF)
    CONF.set_override('transport_url', '')
    try:
        code = manage(cell_v2.create_cell, 'cell_v2', cell_name='x',
                      transport_url=None, database_connection='sqlite://',
                      disabled=False, verbose=False)
    finally:
        CONF.clear_override('transport_url')
    assert code == 1
    assert 'Must specify --transport-url' in capsys.readouterr().out


def test_mask_transport_url():
    assert cell_v2.mask_transport_url(
        'rabbit://a:b@h1:5672,c:d@h2:5672/vh') == \
        'rabbit://a:****@h1:5672,c:****@h2:5672/vh'
    assert cell_v2.mask_transport_url('none:///') == 'none:///'


def test_discover_hosts_verbose_strict_and_list(manage, world, capsys):
    node = compute_records.save_compute_node(fx.ctxt(), world.cell1, 'h4',
                                             'h4', {})
    args = dict(cell_uuid=None, verbose=True, strict=True,
                by_service=False)
    assert manage(cell_v2.discover_hosts, 'cell_v2', **args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == 'Found 2 cell mappings.'
    assert "Creating host mapping for compute host 'h4': %s" % (
        node['uuid']) in out
    assert out[-1] == 'Found 1 unmapped computes in cell: %s' % CELL1
    assert manage(cell_v2.discover_hosts, 'cell_v2', **args) == 1
    assert capsys.readouterr().out.splitlines()[-1] == \
        'Found 0 unmapped computes in cell: %s' % CELL1
    args['verbose'] = False
    assert manage(cell_v2.discover_hosts, 'cell_v2', **args) == 1
    assert capsys.readouterr().out == ''
    assert manage(cell_v2.list_hosts, 'cell_v2', cell_uuid=None) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[1].split() == [
        '|', 'Cell', 'Name', '|', 'Cell', 'UUID', '|', 'Hostname', '|']
    assert [line.split('|')[3].strip() for line in table.splitlines()
            if CELL1 in line] == ['h1', 'h2', 'h3', 'h4']
    assert manage(cell_v2.list_hosts, 'cell_v2', cell_uuid='nope') == 1


def test_delete_host_exit_codes(manage, world, capsys):
    run = lambda **a: manage(cell_v2.delete_host, 'cell_v2', **a)  # noqa
    assert run(cell_uuid='nope', host='h1') == 1
    assert run(cell_uuid=CELL1, host='ghost') == 2
    assert run(cell_uuid=cells.CELL0_UUID, host='h1') == 3
    spec, instances = world.boot(1)
    build_flow.schedule_and_build_instances(world.manager, fx.ctxt(), spec,
                                            [instances[0].uuid], instances)
    assert run(cell_uuid=CELL1, host='h1') == 4
    assert run(cell_uuid=CELL1, host='h2') == 0
    assert boot_records.get_host_mapping(fx.ctxt(), 'h2',
                                         database=world.api) is None
    assert [n['host'] for n in compute_records.list_unmapped_nodes(
        fx.ctxt(), world.cell1)] == ['h1', 'h2', 'h3']


def test_map_instances_maps_what_is_missing(manage, world, capsys):
    made = [instance_records.create_instance(fx.ctxt(), world.cell1,
                                             fx.instance())
            for _ in range(3)]
    instance_records.destroy_instance(fx.ctxt(), world.cell1, made[0].uuid)
    assert manage(cell_v2.map_instances, 'cell_v2', cell_uuid=CELL1,
                  max_count=2, reset=False) == 1
    assert manage(cell_v2.map_instances, 'cell_v2', cell_uuid=CELL1,
                  max_count=None, reset=False) == 0
    assert capsys.readouterr().out.splitlines()[-1] == \
        '1 instances mapped to cell %s.' % CELL1
    mappings = boot_records.get_instance_mappings(
        fx.ctxt(), [i.uuid for i in made], database=world.api)
    assert {m['cell_uuid'] for m in mappings.values()} == {CELL1}
    assert mappings[made[0].uuid]['queued_for_delete']
    assert manage(cell_v2.map_instances, 'cell_v2', cell_uuid='nope',
                  max_count=None, reset=False) == 127


def test_the_command_line_end_to_end(tmp_path):
    """The real berth-manage: option names, output, exit codes."""
    conf = tmp_path / 'berth.conf'
    conf.write_text(
        '[DEFAULT]\ntransport_url = rabbit://guest:guest@127.0.0.1:5672/\n'
        '[api_database]\nconnection = sqlite:///%s/api.sqlite\n'
        '[database]\nconnection = sqlite:///%s/cell1.sqlite\n'
        % (tmp_path, tmp_path))

    def run(*args):
        result = subprocess.run(
            [sys.executable, '-m', 'services.manage.main', '--config-file',
             str(conf)] + list(args), capture_output=True, text=True,
            timeout=120, cwd=os.path.dirname(os.path.dirname(
                os.path.dirname(os.path.dirname(__file__)))))
        return result.returncode, result.stdout
    assert run('api_db', 'sync')[0] == 0
    code, out = run('cell_v2', 'simple_cell_setup')
    assert code == 0 and 'No hosts found to map to cell' in out
    code, out = run('cell_v2', 'discover_hosts', '--verbose', '--strict')
    assert code == 1 and 'Found 2 cell mappings.' in out
    assert 'Skipping cell0 since it does not contain hosts.' in out
