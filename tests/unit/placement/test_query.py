# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Table-driven tests of the provider-selection query parsers."""

import uuid

import pytest

from common import context
from services.placement import errors
from services.placement.microversion import Version
from services.placement import query
from tests.unit.placement import fixtures

AGG_A = str(uuid.uuid4())
AGG_B = str(uuid.uuid4())


@pytest.fixture(scope='module')
def ctx():
    fixtures._conf()
    return context.get_admin_context()


@pytest.mark.parametrize('value,expected', [
    ('VCPU:2', {'VCPU': 2}),
    ('VCPU:2,MEMORY_MB:1024', {'VCPU': 2, 'MEMORY_MB': 1024}),
])
def test_resources_parse(ctx, value, expected):
    assert query.parse_resources(ctx, value) == expected


@pytest.mark.parametrize('value,message', [
    ('', 'Got: empty string.'),
    ('VCPU', 'Got: VCPU.'),
    ('DISK_GB:500,', 'Got: .'),
    ('VCPU:fred', 'expected positive integer amount. Got: fred.'),
    ('VCPU:-2', 'requires amount >= 1. Got: -2.'),
    ('VCPU:0', 'requires amount >= 1. Got: 0.'),
    ('NO_SUCH_CLASS:1', 'Invalid resource class in resources parameter'),
])
def test_resources_reject(ctx, value, message):
    with pytest.raises(errors.BadRequest) as caught:
        query.parse_resources(ctx, value)
    assert message in caught.value.message


@pytest.mark.parametrize('values,version,all_of,any_of,forbidden', [
    (['HW_CPU_X86_AVX2'], (1, 18), {'HW_CPU_X86_AVX2'}, (), set()),
    (['HW_CPU_X86_AVX2,!STORAGE_DISK_SSD'], (1, 22),
     {'HW_CPU_X86_AVX2'}, (), {'STORAGE_DISK_SSD'}),
    # Before 1.39 a repeated parameter overwrites the earlier one.
    (['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE'], (1, 38),
     {'HW_CPU_X86_SSE'}, (), set()),
    # From 1.39 repeated parameters AND together, and in: means any-of.
    (['HW_CPU_X86_AVX2', 'in:HW_CPU_X86_SSE,HW_CPU_X86_SSE2'], (1, 39),
     {'HW_CPU_X86_AVX2'}, ({'HW_CPU_X86_SSE', 'HW_CPU_X86_SSE2'},), set()),
])
def test_required_parse(ctx, values, version, all_of, any_of, forbidden):
    parsed = query.parse_required(ctx, values, Version(*version))
    assert parsed.all_of == all_of
    assert [set(g) for g in parsed.any_of] == [set(g) for g in any_of]
    assert parsed.forbidden == forbidden


@pytest.mark.parametrize('values,version,message', [
    ([''], (1, 22), 'of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC.'),
    (['!STORAGE_DISK_SSD'], (1, 21),
     'of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: !STORAGE_DISK_SSD'),
    (['STORAGE_DISK_SSD,,HW_CPU_X86_SSE'], (1, 22), 'of the form'),
    (['STORAGE_DISK_SSD,BOGUS_TRAIT'], (1, 22),
     'No such trait(s): BOGUS_TRAIT.'),
    (['in:HW_CPU_X86_SSE,HW_CPU_X86_SSE2'], (1, 38),
     'only supported since microversion 1.39'),
])
def test_required_reject(ctx, values, version, message):
    with pytest.raises(errors.BadRequest) as caught:
        query.parse_required(ctx, values, Version(*version))
    assert message in caught.value.message


def test_member_of_forms():
    parsed = query.parse_member_of(
        ['in:%s,%s' % (AGG_A, AGG_B), '!' + AGG_B], Version(1, 32))
    assert parsed.any_of == (frozenset([AGG_A, AGG_B]),)
    assert parsed.forbidden == frozenset([AGG_B])
    parsed = query.parse_member_of([AGG_A, AGG_B], Version(1, 24))
    assert parsed.any_of == (frozenset([AGG_A]), frozenset([AGG_B]))


@pytest.mark.parametrize('values,version,message', [
    ([AGG_A, AGG_B], (1, 23), 'Multiple member_of parameters'),
    (['%s,%s' % (AGG_A, AGG_B)], (1, 32), "'in:' or '!in:' keyword"),
    (['in:'], (1, 23), 'to contain valid UUID(s)'),
    (['in:%s,INVALID' % AGG_A], (1, 23), 'to contain valid UUID(s)'),
    (['!' + AGG_A], (1, 31), 'Forbidden member_of parameters'),
])
def test_member_of_reject(values, version, message):
    with pytest.raises(errors.BadRequest) as caught:
        query.parse_member_of(values, Version(*version))
    assert message in caught.value.message
