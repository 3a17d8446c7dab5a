# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Unit tests of the candidate combination engine (no database).

The central case is the one that makes upstream enumerate millions of
combinations: one tree with eight children holding one unit each of a
class, and eight granular groups asking for one unit each.
"""

import itertools

from services.placement.objects import candidate_combine as combine

ROOT = 1
CHILDREN = list(range(2, 10))
RC = 100


def _eight_by_eight(groups=8, isolate=True, distinct_mappings=True):
    plans = [combine.GroupPlan('_G%d' % i, ((RC, 1),), False,
                               {ROOT: list(CHILDREN)},
                               signature=((RC, 1),))
             for i in range(groups)]
    capacity = {(pid, RC): (1.0, 0, 1) for pid in CHILDREN}
    root_of = {pid: ROOT for pid in CHILDREN}
    parent_of = {pid: ROOT for pid in CHILDREN}
    return combine.Plan(plans, [ROOT], capacity, root_of,
                        parent_of=parent_of, isolate=isolate,
                        distinct_mappings=distinct_mappings)


def test_eight_groups_without_mappings_is_one_candidate():
    # NOTE: before 1.34 the eight! orders of the same providers render
    # identically; only one is generated.
    plan = _eight_by_eight(distinct_mappings=False)
    found = list(combine.generate(plan))
    assert len(found) == 1
    allocations, mappings = found[0]
    assert allocations == frozenset(((pid, RC), 1) for pid in CHILDREN)
    assert sorted(pids[0] for _suffix, pids in mappings) == CHILDREN


def test_eight_groups_with_mappings_is_lazy_and_correct():
    plan = _eight_by_eight()
    stream = combine.generate(plan)
    first = list(itertools.islice(stream, 5))
    assert len(first) == 5
    for allocations, mappings in first:
        # Every child gives its one unit; every group has its own child.
        assert allocations == frozenset(((pid, RC), 1) for pid in CHILDREN)
        assert sorted(pids[0] for _s, pids in mappings) == CHILDREN
    assert len({m for _a, m in first}) == 5


def test_eight_groups_with_mappings_all_permutations():
    plan = _eight_by_eight()
    assert sum(1 for _ in combine.generate(plan)) == 40320


def test_eight_groups_policy_none_capacity_limits():
    # One unit per child: group_policy=none cannot stack two groups on a
    # child, so the answer is the same permutations.
    plan = _eight_by_eight(isolate=False, distinct_mappings=False)
    assert len(list(combine.generate(plan))) == 1


def test_nine_groups_on_eight_providers_fails_before_enumerating():
    plan = _eight_by_eight(groups=9)
    reads = []

    class CountingDict(dict):
        def __getitem__(self, key):
            reads.append(key)
            return dict.__getitem__(self, key)

    plan.capacity = CountingDict(plan.capacity)
    # The matching proves infeasibility; no combination is even tried.
    assert list(combine.generate(plan)) == []
    assert reads == []
    assert combine._matching_exists([CHILDREN] * 8)
    assert not combine._matching_exists([CHILDREN] * 9)


def test_capacity_is_checked_across_groups():
    # Two groups of 3 on a provider with capacity 5 do not fit; 2+3 do.
    capacity = {(1, RC): (5.0, 0, 5)}
    for amounts, expected in (((3, 3), 0), ((2, 3), 1)):
        plans = [combine.GroupPlan(str(i), ((RC, a),), False, {1: [1]})
                 for i, a in enumerate(amounts, 1)]
        plan = combine.Plan(plans, [1], capacity, {1: 1})
        assert len(list(combine.generate(plan))) == expected


def test_max_unit_is_checked_across_groups():
    capacity = {(1, RC): (100.0, 0, 2)}
    plans = [combine.GroupPlan(str(i), ((RC, 1),), False, {1: [1]})
             for i in range(3)]
    plan = combine.Plan(plans, [1], capacity, {1: 1})
    assert list(combine.generate(plan)) == []


def test_same_subtree_needs_a_common_ancestor():
    # 1 is the root; 2 and 3 are children; 4 is under 2.
    parent_of = {1: None, 2: 1, 3: 1, 4: 2}
    capacity = {(p, RC): (10.0, 0, 10) for p in (2, 3, 4)}
    plans = [combine.GroupPlan('_A', ((RC, 1),), False, {1: [2, 3]}),
             combine.GroupPlan('_B', ((RC, 1),), False, {1: [3, 4]})]
    plan = combine.Plan(plans, [1], capacity, {2: 1, 3: 1, 4: 1},
                        parent_of=parent_of, same_subtree=[('_A', '_B')])
    pairs = sorted((m[0][1][0], m[1][1][0])
                   for _a, m in combine.generate(plan))
    assert pairs == [(2, 4), (3, 3)]


def test_old_microversions_refuse_two_providers_of_one_tree():
    capacity = {(1, RC): (10.0, 0, 10), (2, RC + 1): (10.0, 0, 10)}
    spread = combine.GroupPlan('', ((RC, 1), (RC + 1, 1)), True,
                               {1: [(1, 2)]})
    for aware, expected in ((True, 1), (False, 0)):
        plan = combine.Plan([spread], [1], capacity, {1: 1, 2: 1},
                            nested_aware=aware)
        assert len(list(combine.generate(plan))) == expected


def test_breadth_first_takes_one_per_root_first():
    capacity = {(p, RC): (10.0, 0, 10) for p in (1, 2, 3, 4)}
    options = {10: [1, 2], 20: [3, 4]}
    plan = combine.Plan([combine.GroupPlan('1', ((RC, 1),), False, options)],
                        [10, 20], capacity, {1: 10, 2: 10, 3: 20, 4: 20})
    stream = combine.generate(plan, 'breadth-first')
    order = [min(a)[0][0] for a, _m in stream]
    assert order == [1, 3, 2, 4]
    stream = combine.generate(plan, 'depth-first')
    order = [min(a)[0][0] for a, _m in stream]
    assert order == [1, 2, 3, 4]


def test_identical_allocations_from_two_roots_are_returned_once():
    # A sharing provider (5) serving two trees gives the same candidate
    # from each of them.
    capacity = {(5, RC): (10.0, 0, 10)}
    plan = combine.Plan(
        [combine.GroupPlan('', ((RC, 1),), True, {1: [(5,)], 2: [(5,)]})],
        [1, 2], capacity, {5: 5})
    assert len(list(combine.generate(plan))) == 1
