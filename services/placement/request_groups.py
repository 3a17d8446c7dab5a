# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Request groups of ``GET /allocation_candidates`` parsed from the query.

The unsuffixed ``resources``/``required``/``member_of``/``in_tree`` form one
group whose resources may spread over a tree and its sharing providers.
Every suffix ``$S`` (digits from 1.25, ``[a-zA-Z0-9_-]{1,64}`` from 1.33)
forms a granular group that exactly one provider must satisfy. Around the
groups sit ``group_policy`` (1.25), ``limit`` (1.16), ``root_required``
(1.35) and ``same_subtree`` (1.36). The per-parameter syntax is parsed by
:mod:`services.placement.query`; this module adds the grouping rules.
"""

import collections
import re

from services.placement import errors
from services.placement import query
from services.placement import util

_KEY = re.compile(r'^(resources|required|member_of|in_tree)(.*)$')

RequestGroup = collections.namedtuple(
    'RequestGroup', 'suffix resources traits member_of in_tree')
RequestGroup.__doc__ = """One request group.

:suffix: '' for the unsuffixed group, else the suffix as given ('1',
    '_NET').
:resources: dict of resource class name -> amount (may be empty for a
    resourceless granular group, 1.36).
:traits: :class:`query.RequiredTraits`.
:member_of: :class:`query.MemberOf`.
:in_tree: provider uuid or None.
"""

CandidateRequest = collections.namedtuple(
    'CandidateRequest',
    'groups group_policy limit root_required same_subtree')
CandidateRequest.__doc__ = """Everything a candidates request asks for.

:groups: list of RequestGroup, the unsuffixed one (if any) first, then the
    granular ones sorted by suffix.
:group_policy: 'none' or 'isolate' (None when not given).
:limit: int or None.
:root_required: :class:`query.RequiredTraits` (any_of unused).
:same_subtree: list of tuples of suffixes.
"""


def is_granular(group):
    """True for a suffixed group, which one provider must satisfy."""
    return group.suffix != ''


def _parse_in_tree(value, param):
    if not util.is_uuid_like(value):
        raise errors.BadRequest(
            "Invalid query string parameters: Expected '%s' parameter to "
            "be a format of uuid. Got: %s" % (param, value))
    return util.normalize_uuid(value)


def _collect(params):
    """{suffix: {kind: [values]}} over every group parameter of ``params``.

    :param params: :func:`util.query_params` of the request.
    """
    found = collections.OrderedDict()
    for key, values in params.items():
        match = _KEY.match(key)
        if match:
            kind, suffix = match.groups()
            found.setdefault(suffix, {})[kind] = values
    return found


def _split_root_required(params, version):
    """root_required's traits, checked for form and conflicts only.

    Upstream reads it with the request-wide parameters, before the groups,
    so its errors come first; the traits are looked up at the end.
    """
    values = params.get('root_required')
    if not values:
        return query.NO_TRAITS
    if len(values) > 1:
        raise errors.BadRequest(
            "Query parameter 'root_required' may be specified only once.",
            code=errors.ILLEGAL_DUPLICATE_QUERYPARAM)
    value = values[0]
    if value.startswith('in:'):
        raise errors.BadRequest(
            "Invalid query string parameters: Expected 'root_required' "
            "parameter value of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC. "
            "Got: %s" % value)
    traits = query.split_required([value], version, param='root_required')
    conflicts = query.trait_conflicts(traits)
    if conflicts:
        # NOTE: a trait both required and forbidden can match nothing;
        # upstream refuses it as a bad value rather than answer empty.
        raise errors.BadRequest(
            'Conflicting required and forbidden traits found in '
            'root_required: %s' % ', '.join(n for (n,) in conflicts),
            code=errors.QUERYPARAM_BAD_VALUE)
    return traits


def _split_group_traits(raw, version):
    """{suffix: RequiredTraits of names} of every group, checked for form.

    :raises errors.BadRequest: a malformed value, or (as upstream) a
        group's required traits contradicting its forbidden ones, before
        any trait is looked up.
    """
    required = {suffix: query.split_required(
        kinds.get('required', []), version, param='required' + suffix)
        for suffix, kinds in raw.items()}
    found = sorted('required%s: (%s)' % (suffix, ', '.join(names))
                   for suffix, traits in required.items()
                   for names in query.trait_conflicts(traits))
    if found:
        # NOTE: upstream gives this refusal no specific error code.
        raise errors.BadRequest(
            'Conflicting required and forbidden traits found in the '
            'following traits keys: %s' % ', '.join(found))
    return required


def _parse_same_subtree(params, suffixes):
    result = []
    for value in params.get('same_subtree', ()):
        # NOTE: upstream strips each suffix, so "_A, _B" names _A and _B
        # (as trait lists are stripped); resources and member_of values
        # are not stripped there, and are not here.
        names = [name.strip() for name in value.split(',')]
        if any(name == '' for name in names):
            raise errors.BadRequest(
                'Empty string (unsuffixed group) can not be specified in '
                '`same_subtree` ', code=errors.QUERYPARAM_BAD_VALUE)
        unknown = [name for name in names if name not in suffixes]
        if unknown:
            raise errors.BadRequest(
                'Real suffixes should be specified in `same_subtree`: %s '
                'not found in %s.' % (unknown, sorted(suffixes)),
                code=errors.QUERYPARAM_BAD_VALUE)
        # NOTE: duplicates in one list mean nothing more; squash them
        # keeping the first occurrence's order.
        result.append(tuple(collections.OrderedDict.fromkeys(names)))
    return result


def _check_orphans(raw, version):
    """Upstream's checks for groups lacking a ``resources`` parameter."""
    if version >= (1, 36):
        if not any('resources' in kinds for kinds in raw.values()):
            raise errors.BadRequest(
                'There must be at least one resources or resources[$S] '
                'parameter.', code=errors.QUERYPARAM_MISSING_VALUE)
        return
    for kind, label in (('required', 'traits'), ('member_of', 'member_of')):
        orphans = sorted(kind + suffix for suffix, kinds in raw.items()
                         if kind in kinds and 'resources' not in kinds)
        if orphans:
            raise errors.BadRequest(
                'All %s parameters must be associated with resources. '
                'Found the following orphaned %s keys: %s'
                % (label, label, ', '.join(orphans)))
    if not any('resources' in kinds for kinds in raw.values()):
        raise errors.BadRequest(
            'At least one request group (`resources` or `resources{$S}`) '
            'is required.')
    if any('resources' not in kinds for kinds in raw.values()):
        raise errors.BadRequest('All request groups must specify resources.')


def _parse_group(ctx, suffix, kinds, traits, version):
    """The RequestGroup of one suffix from its {kind: [values]}.

    :param traits: the group's RequiredTraits from query.split_required.
    """
    resources = {}
    if 'resources' in kinds:
        resources = query.parse_resources(
            ctx, kinds['resources'][-1], param='resources' + suffix)
    traits = query.resolve_required(ctx, traits)
    member_of = query.parse_member_of(kinds.get('member_of', []), version)
    in_tree = None
    if 'in_tree' in kinds:
        in_tree = _parse_in_tree(kinds['in_tree'][-1], 'in_tree' + suffix)
    return RequestGroup(suffix, resources, traits, member_of, in_tree)


def _check_resourceless(groups, same_subtree):
    """Only suffixed groups named in a same_subtree may lack resources."""
    in_subtree = {s for names in same_subtree for s in names}
    for group in groups:
        if group.suffix and not group.resources and (
                group.suffix not in in_subtree):
            raise errors.BadRequest(
                'Resourceless suffixed group request should be specified '
                'in `same_subtree` query param: bad group(s) - %s.'
                % [group.suffix], code=errors.QUERYPARAM_BAD_VALUE)


def _first(params, name):
    """The first value of ``name`` or None."""
    values = params.get(name)
    return values[0] if values else None


def parse(ctx, req, version):
    """Parse the query of a candidates request into a CandidateRequest.

    The query string's shape has already been checked against the schema
    of the microversion; this checks values and the rules between them.
    Every parameter is read from one map built in one pass over the query
    (:func:`util.query_params`), so the work is linear in its length.

    :raises errors.BadRequest: with upstream's messages.
    """
    params = util.query_params(req)
    root_required = _split_root_required(params, version)
    raw = _collect(params)
    _check_orphans(raw, version)
    required = _split_group_traits(raw, version)
    groups = [_parse_group(ctx, suffix, kinds, required[suffix], version)
              for suffix, kinds in raw.items()]
    if any(g.suffix == '' and not g.resources for g in groups):
        # NOTE: only suffixed groups may be resourceless (1.36), and only
        # as members of a same_subtree (checked below).
        raise errors.BadRequest('All request groups must specify resources.')
    groups.sort(key=lambda g: (g.suffix != '', g.suffix))
    suffixes = {g.suffix for g in groups if g.suffix}
    same_subtree = _parse_same_subtree(params, suffixes)
    _check_resourceless(groups, same_subtree)
    group_policy = _first(params, 'group_policy')
    with_resources = [g for g in groups if g.suffix and g.resources]
    if len(with_resources) > 1 and group_policy is None:
        raise errors.BadRequest(
            'The "group_policy" parameter is required when specifying '
            'more than one "resources{N}" parameter.')
    limit = _first(params, 'limit')
    return CandidateRequest(groups, group_policy,
                            None if limit is None else int(limit),
                            query.resolve_required(ctx, root_required),
                            same_subtree)
