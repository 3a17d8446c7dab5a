# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Combining request groups into allocation candidates, lazily.

Input is a :class:`Plan`: for every root provider (tree) and every request
group, the options that group has in that tree. A granular group's option
is one provider; the unsuffixed group's option is one provider per
requested class. A candidate picks one option per group such that

* summed amounts still fit every provider (capacity and max_unit),
* with ``isolate``, granular groups use pairwise different providers,
* for every ``same_subtree`` list, one chosen provider is an ancestor (or
  the same) of all the others of that list,
* before 1.29, no two providers of one tree carry resources.

Candidates come out of generators, one per root, merged depth-first or
breadth-first, so that a cap or a limit stops the work early. Two helpers
keep the number of explored combinations small where upstream explodes:
a bipartite matching proves a tree infeasible under ``isolate`` before
anything is enumerated, and when two groups are interchangeable and the
response cannot tell them apart (no mappings, before 1.34) only one order
of their providers is explored.
"""

import itertools

Candidate = tuple
"""(allocations, mappings): allocations is a frozenset of
((provider id, class id), amount); mappings a tuple of
(suffix, (provider ids...)) in group order."""


class GroupPlan(object):
    """What one request group needs, independent of the tree.

    :param suffix: the group's suffix ('' for the unsuffixed group).
    :param resources: tuple of (class id, amount), sorted by class id.
    :param spread: True for the unsuffixed group (one provider per class).
    :param options: {root id: list of options}; an option is a provider id
        (granular) or a tuple of provider ids aligned with ``resources``.
    :param signature: a hashable identity; groups with equal signatures
        are interchangeable.
    """

    def __init__(self, suffix, resources, spread, options, signature=None):
        self.suffix = suffix
        self.resources = resources
        self.spread = spread
        self.options = options
        self.signature = signature

    def amounts(self, option):
        """[(provider id, class id, amount)] the option allocates."""
        if self.spread:
            return [(pid, rc, amt)
                    for pid, (rc, amt) in zip(option, self.resources)]
        return [(option, rc, amt) for rc, amt in self.resources]

    def providers(self, option):
        """The distinct providers of an option, in first-use order."""
        if self.spread:
            return tuple(dict.fromkeys(option))
        return (option,)


class Plan(object):
    """Everything the combination needs.

    :param groups: list of GroupPlan (the unsuffixed first, if any).
    :param roots: root ids to consider, in output order.
    :param capacity: {(provider id, class id): (capacity, used, max_unit)}.
    :param root_of: {provider id: root id} for providers with resources.
    :param parent_of: {provider id: parent id or None}; needed only for
        ``same_subtree``.
    :param isolate: True for group_policy=isolate.
    :param same_subtree: list of tuples of suffixes.
    :param nested_aware: False before 1.29 (no two providers of one tree).
    :param distinct_mappings: True from 1.34, when mappings are shown and
        interchangeable groups still give distinct candidates.
    :param shared: the set of sharing providers (None: unknown).
    """

    def __init__(self, groups, roots, capacity, root_of, parent_of=None,
                 isolate=False, same_subtree=(), nested_aware=True,
                 distinct_mappings=True, shared=None):
        self.groups = groups
        # Providers serving more than their own tree; None: assume any.
        self.shared = shared
        self.roots = roots
        self.capacity = capacity
        self.root_of = root_of
        self.parent_of = parent_of or {}
        self.isolate = isolate
        self.nested_aware = nested_aware
        self.distinct_mappings = distinct_mappings
        index = {g.suffix: i for i, g in enumerate(groups)}
        lists = [tuple(index[s] for s in names) for names in same_subtree]
        # NOTE: check each same_subtree list as soon as its last member is
        # chosen, to prune early.
        self.checks_at = [[] for _ in groups]
        for members in lists:
            if len(members) > 1:
                self.checks_at[max(members)].append(members)
        self.twin_of = [None] * len(groups)
        if not distinct_mappings:
            self.twin_of = _twins(groups, lists)
        self._ancestors = {}

    def ancestors(self, pid):
        """The set of ``pid`` and all its ancestors."""
        found = self._ancestors.get(pid)
        if found is None:
            found = set()
            node = pid
            while node is not None and node not in found:
                found.add(node)
                node = self.parent_of.get(node)
            self._ancestors[pid] = found
        return found


def _twins(groups, lists):
    """For each group, the index of an earlier interchangeable one, or None.

    Two granular groups are interchangeable when they ask the same (equal
    signatures) and belong to the same same_subtree lists; when the answer
    shows no mappings, exploring one order of their providers is enough.

    :param lists: the same_subtree lists as tuples of group indexes.
    """
    memberships = [frozenset(n for n, members in enumerate(lists)
                             if i in members)
                   for i in range(len(groups))]
    twin_of = [None] * len(groups)
    for i, group in enumerate(groups):
        if group.spread or group.signature is None:
            continue
        for j in range(i - 1, -1, -1):
            other = groups[j]
            if (not other.spread and group.signature == other.signature and
                    memberships[i] == memberships[j]):
                twin_of[i] = j
                break
    return twin_of


def _matching_exists(option_lists):
    """True when every list can get its own distinct provider (Kuhn)."""
    # NOTE: owner maps a provider to the list that holds it. assign(i)
    # tries i's providers in turn; a provider already owned is taken over
    # if its owner can move to another one (an augmenting path), so a
    # failure is certain, not an artefact of the order tried. At most
    # len(lists) augmentations of len(providers) steps each: far cheaper
    # than enumerating the combinations that would all fail.
    owner = {}

    def assign(i, seen):
        for pid in option_lists[i]:
            if pid in seen:
                continue
            seen.add(pid)
            if pid not in owner or assign(owner[pid], seen):
                owner[pid] = i
                return True
        return False

    return all(assign(i, set()) for i in range(len(option_lists)))


def _same_subtree_ok(plan, chosen, members):
    """True when one chosen provider of ``members`` is an ancestor (or the
    same) of all the others, i.e. they lie in one subtree.
    """
    # NOTE: the top must be one of the chosen providers (the API's rule),
    # so only those are tried, with their cached ancestor sets.
    pids = [chosen[i] for i in members]
    for top in set(pids):
        if all(top in plan.ancestors(pid) for pid in pids):
            return True
    return False


def _tree_options(plan, root):
    """Each group's options in the tree of ``root``, or None.

    None when some group has no option in that tree, or when ``isolate``
    leaves the granular groups no way to get distinct providers.
    """
    options = []
    for group in plan.groups:
        found = group.options.get(root)
        if not found:
            return None
        options.append(found)
    # NOTE: under isolate a tree whose granular groups cannot each have
    # their own provider would be searched in full for nothing; a matching
    # proves it in polynomial time first.
    granular = [i for i, g in enumerate(plan.groups) if not g.spread]
    if plan.isolate and len(granular) > 1 and not _matching_exists(
            [options[i] for i in granular]):
        return None
    return options


def _take_back(added, changes):
    """Remove the (key, amount) ``changes`` from the running ``added``."""
    for key, amount in changes:
        left = added[key] - amount
        if left:
            added[key] = left
        else:
            del added[key]


def _add_if_fits(capacity, added, amounts):
    """Add an option's amounts to the running ``added`` if they all fit.

    :param amounts: [(provider id, class id, amount)] of the option.
    :returns: the list of (key, amount) added, or None when a provider
        would exceed its capacity or max_unit (``added`` is then as it
        was).
    """
    # NOTE: ``added`` is the running total of the whole partial candidate
    # (all levels above), so a spread option that puts two classes, or a
    # later group, on one provider is checked against the sum. It is
    # updated in place and undone on failure rather than copied, so a
    # tried option allocates nothing but its list of changes.
    changes = []
    for pid, rc, amount in amounts:
        key = (pid, rc)
        total = added.get(key, 0) + amount
        cap, used, max_unit = capacity[key]
        if total > max_unit or used + total > cap:
            _take_back(added, changes)
            return None
        added[key] = total
        changes.append((key, amount))
    return changes


def _start_position(plan, position, level):
    """The first option position to try when ``level`` is entered anew."""
    twin = plan.twin_of[level]
    if twin is None:
        return 0
    # NOTE: an interchangeable earlier group took position p; only
    # positions from p on (after p with isolate) are explored, so each set
    # of providers comes in one order.
    return position[twin] + (1 if plan.isolate else 0)


def _next_fit(plan, level, mine, start, added, chosen, taken):
    """Choose the first option of ``mine`` from ``start`` on that fits.

    An option fits when it is not taken, its amounts fit the providers on
    top of ``added`` and the same_subtree lists completed at this level
    hold. The tried option is left in ``chosen[level]``; the amounts of
    the option that fits stay in ``added``.

    :param taken: providers used by isolated groups, or None when this
        level's group is not isolated.
    :returns: (position, changes) of the option that fits, or
        (None, None).
    """
    group = plan.groups[level]
    checks = plan.checks_at[level]
    for pos in range(start, len(mine)):
        option = mine[pos]
        if taken is not None and option in taken:
            continue
        changes = _add_if_fits(plan.capacity, added, group.amounts(option))
        chosen[level] = option
        if changes is None:
            continue
        if all(_same_subtree_ok(plan, chosen, members)
               for members in checks):
            return pos, changes
        _take_back(added, changes)
    return None, None


def root_candidates(plan, root):
    """Generate the candidates of one tree, in a stable order.

    A depth-first search over the groups with an explicit stack (a chain of
    nested generators would cost a frame switch per group per candidate).
    """
    options = _tree_options(plan, root)
    if options is None:
        return
    # NOTE: the search state, one slot per group (level): position is the
    # index of the option chosen there (-1: the level is entered anew),
    # pushed the amounts it added (to undo before trying the next option),
    # chosen/mapping what it chose; taken holds the providers of isolated
    # groups above. Going down a level keeps everything above; going up
    # undoes the level's choice at the next visit.
    groups = plan.groups
    count = len(groups)
    isolating = [plan.isolate and not g.spread for g in groups]
    added = {}
    taken = set()
    chosen = [None] * count
    mapping = [None] * count
    position = [-1] * count
    pushed = [None] * count
    level = 0
    while level >= 0:
        if pushed[level] is not None:
            # Undo the previous choice at this level.
            _take_back(added, pushed[level])
            pushed[level] = None
            if isolating[level]:
                taken.discard(chosen[level])
        if position[level] < 0:
            start = _start_position(plan, position, level)
        else:
            start = position[level] + 1
        pos, changes = _next_fit(plan, level, options[level], start, added,
                                 chosen, taken if isolating[level] else None)
        if changes is None:
            position[level] = -1
            level -= 1
            continue
        position[level] = pos
        pushed[level] = changes
        option = chosen[level]
        mapping[level] = (groups[level].suffix,
                          groups[level].providers(option))
        if isolating[level]:
            taken.add(option)
        if level + 1 < count:
            level += 1
            continue
        candidate = _finish(plan, mapping, added)
        if candidate is not None:
            yield candidate


def _finish(plan, mapping, added):
    """The Candidate of a complete choice, or None if it is excluded."""
    # NOTE: before 1.29 a client could not tell providers of one tree
    # apart in the answer, so a candidate takes resources from at most one
    # provider per tree.
    if not plan.nested_aware:
        pids = {pid for pid, _rc in added}
        if len({plan.root_of[pid] for pid in pids}) != len(pids):
            return None
    # NOTE: a frozenset, not a sorted tuple: it is the identity of the
    # allocations and sorting happens once per distinct one, at rendering.
    return frozenset(added.items()), tuple(mapping)


def spread_options(per_class, check=None):
    """Options of the unsuffixed group in one tree.

    :param per_class: list (aligned with the group's classes) of provider
        id lists.
    :param check: a function of the option's distinct providers returning
        False to drop it (the group's required traits).
    """
    # NOTE: the unsuffixed group may take each class from another provider
    # of the tree; its required traits then count over the providers
    # chosen together, so they are checked per combination, not per
    # provider.
    result = []
    for option in itertools.product(*per_class):
        if check is None or check(set(option)):
            result.append(option)
    return result


def generate(plan, strategy='breadth-first'):
    """All candidates of the plan, without repeats, lazily.

    :param strategy: 'depth-first' exhausts a tree before the next;
        'breadth-first' takes one candidate of every tree in turn.
    """
    if strategy == 'depth-first':
        stream = itertools.chain.from_iterable(
            root_candidates(plan, root) for root in plan.roots)
    else:
        stream = _round_robin([root_candidates(plan, root)
                               for root in plan.roots])
    seen = set()
    shared = plan.shared
    for allocations, mappings in stream:
        if plan.distinct_mappings:
            # NOTE: within one tree distinct choices give distinct
            # candidates; only a candidate built from sharing providers
            # alone can come again from another tree. Skipping the
            # bookkeeping for the others keeps big answers cheap.
            if shared is not None and not any(
                    pid in shared for (pid, _rc), _a in allocations):
                yield allocations, mappings
                continue
            key = (allocations, mappings)
        else:
            key = allocations
        # NOTE: without mappings (before 1.34) two choices with the same
        # allocations look the same to the client: one is shown.
        if key in seen:
            continue
        seen.add(key)
        yield allocations, mappings


def _round_robin(generators):
    """One item of each generator in turn, dropping those exhausted."""
    # NOTE: breadth-first so that a limit or cap spreads the answer over
    # many trees instead of exhausting the first one.
    live = list(generators)
    while live:
        still = []
        for gen in live:
            for item in gen:
                yield item
                still.append(gen)
                break
        live = still
