# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The remembered cells of instances: bounded, the least recent first out."""

from common.db import instance_cells


def test_the_least_recently_remembered_is_forgotten_first():
    known = instance_cells.InstanceCells(2)
    known.remember('a', 'cell1')
    known.remember('b', 'cell1')
    known.remember('a', 'cell1')
    known.remember('c', 'cell2')
    assert (known.get('a'), known.get('b'), known.get('c')) == (
        'cell1', None, 'cell2')


def test_a_forgotten_instance_is_looked_up_again():
    known = instance_cells.InstanceCells(10)
    known.remember('a', 'cell1')
    known.forget('a')
    known.forget('never-seen')
    assert known.get('a') is None


def test_many_remembered_at_once_keep_the_bound():
    known = instance_cells.InstanceCells(2)
    known.remember('a', 'cell1')
    known.remember_many([('b', 'cell1'), ('c', 'cell2'), ('a', 'cell1')])
    assert (known.get('a'), known.get('b'), known.get('c')) == (
        'cell1', None, 'cell2')
    known.remember_many([])
    assert known.get('c') == 'cell2'
