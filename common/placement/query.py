# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The GET /allocation_candidates query a request spec turns into.

The scheduler's request filters add resources, traits and aggregates to
it; :meth:`PlacementQuery.to_params` renders the query string. Keeping
the query as data makes every filter testable on its own and lets the
explanation show exactly what placement was asked. The conductor's
allocation audit builds the same query from a flavor
(:mod:`common.placement.resources`), so both agree on what a server holds.
"""

import dataclasses


def _traits(required, forbidden):
    """``A,B,!C``: required traits, then forbidden ones, each sorted."""
    return ','.join(sorted(required) + sorted('!' + t for t in forbidden))


@dataclasses.dataclass
class Group(object):
    """One request group: unsuffixed (``suffix=''``) or granular.

    :ivar member_of: list of sets of aggregate uuids; each set is an OR,
        the list an AND.
    """

    suffix: str = ''
    resources: dict = dataclasses.field(default_factory=dict)
    required: set = dataclasses.field(default_factory=set)
    forbidden: set = dataclasses.field(default_factory=set)
    any_of: list = dataclasses.field(default_factory=list)
    member_of: list = dataclasses.field(default_factory=list)
    forbidden_aggregates: set = dataclasses.field(default_factory=set)
    in_tree: str = None

    def is_empty(self):
        """True when the group asks for nothing."""
        return not (self.resources or self.required or self.forbidden or
                    self.any_of or self.member_of or
                    self.forbidden_aggregates or self.in_tree)

    def to_params(self):
        """This group's query parameters, each name with its suffix."""
        suffix = self.suffix
        params = []
        resources = {rc: n for rc, n in self.resources.items() if n}
        if resources:
            params.append(('resources' + suffix, ','.join(
                '%s:%d' % (rc, n) for rc, n in sorted(resources.items()))))
        traits = _traits(self.required, self.forbidden)
        if traits:
            params.append(('required' + suffix, traits))
        params.extend(('required' + suffix, 'in:' + ','.join(sorted(any_of)))
                      for any_of in self.any_of)
        params.extend(('member_of' + suffix,
                       'in:' + ','.join(sorted(aggregates)))
                      for aggregates in self.member_of)
        if self.forbidden_aggregates:
            params.append(('member_of' + suffix, '!in:' + ','.join(
                sorted(self.forbidden_aggregates))))
        if self.in_tree:
            params.append(('in_tree' + suffix, self.in_tree))
        return params


@dataclasses.dataclass
class PlacementQuery(object):
    """Request groups plus the request-wide parameters."""

    groups: dict = dataclasses.field(
        default_factory=lambda: {'': Group()})
    group_policy: str = None
    limit: int = None
    root_required: set = dataclasses.field(default_factory=set)
    root_forbidden: set = dataclasses.field(default_factory=set)
    same_subtree: list = dataclasses.field(default_factory=list)
    #: True when no host can match (e.g. a zone without aggregates);
    #: the scheduler then answers NoValidHost without asking placement.
    impossible: str = None

    @property
    def unsuffixed(self):
        """The unsuffixed group."""
        return self.groups['']

    def group(self, suffix):
        """The group with ``suffix``, created on first use."""
        if suffix not in self.groups:
            self.groups[suffix] = Group(suffix=suffix)
        return self.groups[suffix]

    def to_params(self):
        """The query string parameters, as a list of (name, value).

        The groups come first, in suffix order (the unsuffixed one
        first), then the request-wide parameters.
        """
        params = []
        for suffix in sorted(self.groups):
            params.extend(self.groups[suffix].to_params())
        if self.group_policy:
            params.append(('group_policy', self.group_policy))
        roots = _traits(self.root_required, self.root_forbidden)
        if roots:
            params.append(('root_required', roots))
        params.extend(('same_subtree', ','.join(suffixes))
                      for suffixes in self.same_subtree)
        if self.limit:
            params.append(('limit', str(self.limit)))
        return params

    def describe(self):
        """The query as a human-readable string, for explanations."""
        return '&'.join('%s=%s' % pair for pair in self.to_params())
