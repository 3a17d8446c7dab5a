# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Query parsing is linear in the number of query parameters.

webob's MultiDict keeps the query as a list of pairs, so each lookup of a
name (``getall``, ``[name]``, ``get``, ``in``) or each iteration scans all of
it. Parsing stays linear when the number of such scans does not grow with
the number of parameters. These tests count the scans rather than time the
parse, so they neither flake on a loaded machine nor pass by luck.
"""

import pytest
import webob
from webob import multidict

from common import context
from services.placement.microversion import Version
from services.placement import request_groups
from services.placement.schemas import allocation_candidate as ac_schema
from services.placement.schemas import resource_provider as rp_schema
from services.placement import util
from tests.unit.placement import fixtures

# Every MultiDict method whose cost is proportional to its length.
_SCANS = ('getall', 'getone', '__getitem__', 'get', '__contains__',
          'items', 'keys', 'values', '__iter__', 'mixed', 'dict_of_lists',
          'pop', 'popitem', 'setdefault', '__delitem__', 'copy',
          'iteritems', 'iterkeys', 'itervalues')


@pytest.fixture(scope='module')
def ctx():
    fixtures._conf()
    return context.get_admin_context()


@pytest.fixture
def scans(monkeypatch):
    """A list that gets one entry per full scan of a MultiDict."""
    seen = []
    for name in _SCANS:
        original = getattr(multidict.MultiDict, name, None)
        if original is None:
            continue

        def counting(self, *args, _original=original, _name=name, **kw):
            seen.append(_name)
            return _original(self, *args, **kw)
        monkeypatch.setattr(multidict.MultiDict, name, counting)
    return seen


def _candidates_query(groups):
    """``groups`` granular groups, each with resources and a trait."""
    parts = ['resources=VCPU:1', 'required=HW_CPU_X86_AVX2',
             'group_policy=none', 'limit=5']
    for i in range(groups):
        parts.append('resources%d=VCPU:1' % i)
        parts.append('required%d=HW_CPU_X86_AVX2,!HW_CPU_X86_SSE' % i)
        parts.append('member_of%d=in:%s' % (
            i, '00000000-0000-0000-0000-%012d' % i))
    return '&'.join(parts)


def _parse_candidates(ctx, groups):
    req = webob.Request.blank('/allocation_candidates?' +
                              _candidates_query(groups))
    version = Version(1, 39)
    util.validate_query(req, ac_schema.for_version(version))
    return request_groups.parse(ctx, req, version)


def _scans_for(scans, work):
    del scans[:]
    result = work()
    return list(scans), result


def test_candidates_parse_scans_do_not_grow(ctx, scans):
    small, creq = _scans_for(scans, lambda: _parse_candidates(ctx, 10))
    assert len(creq.groups) == 11
    large, creq = _scans_for(scans, lambda: _parse_candidates(ctx, 2000))
    # Every group was parsed, with its own values...
    assert len(creq.groups) == 2001
    last = creq.groups[-1]
    assert last.suffix == '999' and last.resources == {'VCPU': 1}
    assert last.traits.forbidden == {'HW_CPU_X86_SSE'}
    assert creq.limit == 5 and creq.group_policy == 'none'
    # ...yet the query was scanned as often as for 10 groups: a lookup per
    # parameter (the quadratic form) would add thousands of scans.
    assert large == small
    assert len(large) <= 5, large


def test_repeated_parameter_keeps_every_value_in_order(ctx, scans):
    req = webob.Request.blank(
        '/allocation_candidates?resources=VCPU:1&required=HW_CPU_X86_AVX2'
        '&required=in:HW_CPU_X86_SSE,HW_CPU_X86_SSE2&required=!HW_CPU_X86_VMX')
    creq = request_groups.parse(ctx, req, Version(1, 39))
    traits = creq.groups[0].traits
    assert traits.all_of == {'HW_CPU_X86_AVX2'}
    assert traits.any_of == (frozenset({'HW_CPU_X86_SSE',
                                        'HW_CPU_X86_SSE2'}),)
    assert traits.forbidden == {'HW_CPU_X86_VMX'}
    assert util.query_values(req, 'required')[0] == 'HW_CPU_X86_AVX2'


def _validate_providers_query(params):
    query = '&'.join('name%d=x' % i for i in range(params))
    req = webob.Request.blank('/resource_providers?name=a&' + query)
    try:
        util.validate_query(req, rp_schema.for_list(Version(1, 39)))
    except Exception as exc:  # the extra names are refused
        return exc
    return None


def test_query_validation_scans_do_not_grow(scans):
    small, refused = _scans_for(scans, lambda: _validate_providers_query(10))
    assert 'Additional properties are not allowed' in refused.message
    large, refused = _scans_for(scans,
                                lambda: _validate_providers_query(5000))
    assert "'name4999'" in refused.message
    assert large == small and len(large) <= 2, large
