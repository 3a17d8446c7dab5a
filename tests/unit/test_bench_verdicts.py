# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The e2e benchmark's verdict lines: moves beside the same run's boots."""

from tests.bench import e2e


def _results(moves):
    return {
        'phases': [
            {'kind': 'multi-create batches', 'batch': 10,
             'servers_per_s': 90.0, 'cpu_ms_per_server': {'api': 5.0}},
            {'kind': 'single-server requests', 'batch': 1,
             'servers_per_s': 40.0,
             'cpu_ms_per_server': {'api': 10.0, 'conductor': 10.0}}],
        'moves': moves}


def test_moves_are_set_beside_the_single_server_boots():
    lines = e2e.verdicts(_results({
        'cold': {'moves_per_s': 30.0,
                 'cpu_ms_per_move': {'api': 20.0, 'conductor': 30.0}},
        'live': {'moves_per_s': 50.0, 'cpu_ms_per_move': {}}}))
    assert lines[-2] == (
        "cold migrations: 30.0 moves/s, target >= 50: MISSED (0.75 of this "
        "run's boot rate; CPU per move 2.50 of a boot's)", False)
    assert lines[-1] == (
        "live migrations: 50.0 moves/s, target >= 50: met (1.25 of this "
        "run's boot rate)", True)


def test_no_ratio_without_a_boot_rate():
    results = _results({'cold': {'moves_per_s': 30.0,
                                 'cpu_ms_per_move': {'api': 1.0}}})
    results['phases'][1]['servers_per_s'] = None
    assert e2e.verdicts(results)[-1] == (
        'cold migrations: 30.0 moves/s, target >= 50: MISSED', False)
