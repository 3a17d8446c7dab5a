# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Pure logic of allocations: schemas per version, capacity, generations."""

import collections

import jsonschema
import pytest

from services.placement import errors
from services.placement import microversion
from services.placement.objects import allocation
from services.placement.objects import consumer
from services.placement.schemas import allocation as schema
from services.placement.schemas import reshaper as reshaper_schema

RP = '4e05a85b-e8a6-4b3a-82c1-5f6ad3f71d55'
V = microversion.Version

Inv = collections.namedtuple(
    'Inv', 'total reserved min_unit max_unit step_size allocation_ratio '
           'usage')


def _valid(body, body_schema):
    return not list(jsonschema.Draft4Validator(body_schema).iter_errors(body))


def _dict_body(**extra):
    body = {'allocations': {RP: {'resources': {'VCPU': 1}}},
            'project_id': 'p', 'user_id': 'u'}
    body.update(extra)
    return body


@pytest.mark.parametrize('version, fields, ok', [
    (V(1, 12), {}, True),
    (V(1, 27), {}, True),
    (V(1, 28), {}, False),
    (V(1, 28), {'consumer_generation': None}, True),
    (V(1, 33), {'consumer_generation': 1, 'mappings': {'': [RP]}}, False),
    (V(1, 34), {'consumer_generation': 1, 'mappings': {'': [RP]}}, True),
    (V(1, 37), {'consumer_generation': 1, 'consumer_type': 'X'}, False),
    (V(1, 38), {'consumer_generation': 1}, False),
    (V(1, 38), {'consumer_generation': 1, 'consumer_type': 'INSTANCE'},
     True),
    (V(1, 38), {'consumer_generation': 1, 'consumer_type': 'Instance'},
     False),
])
def test_put_schema_fields_by_version(version, fields, ok):
    assert _valid(_dict_body(**fields), schema.put_schema(version)) is ok


def test_list_form_until_1_12():
    body = {'allocations': [{'resource_provider': {'uuid': RP},
                             'resources': {'VCPU': 1}}]}
    assert _valid(body, schema.put_schema(V(1, 0)))
    assert not _valid(body, schema.put_schema(V(1, 8)))
    body.update(project_id='p', user_id='u')
    assert _valid(body, schema.put_schema(V(1, 11)))
    assert not _valid(body, schema.put_schema(V(1, 12)))


def test_empty_allocations_by_version():
    """PUT may empty a consumer from 1.28; POST and reshaper always."""
    assert not _valid(_dict_body(allocations={}), schema.put_schema(V(1, 27)))
    assert _valid(_dict_body(allocations={}, consumer_generation=1),
                  schema.put_schema(V(1, 28)))
    assert _valid({RP: _dict_body(allocations={})},
                  schema.post_schema(V(1, 13)))
    assert _valid({'inventories': {}, 'allocations': {}},
                  reshaper_schema.post_schema(V(1, 30)))


def test_generation_conflict_messages():
    with pytest.raises(errors.Conflict) as exc:
        consumer.check_generation(None, 5)
    assert exc.value.message == (
        'consumer generation conflict - expected null but got 5')
    assert exc.value.code == errors.CONCURRENT_UPDATE
    with pytest.raises(errors.Conflict) as exc:
        consumer.check_generation({'generation': 3}, None)
    assert 'expected 3 but got null' in exc.value.message
    consumer.check_generation(None, None)
    consumer.check_generation({'generation': 2}, 2)


def _check(wanted, inventory):
    providers = {RP: {'id': 1, 'uuid': RP, 'generation': 0}}
    allocation._check_capacity(
        wanted, providers, {(1, rc): inv for rc, inv in inventory.items()},
        {'VCPU': 1, 'DISK_GB': 2})


def test_capacity_counts_ratio_and_reserved():
    # (16 - 4) * 1.5 = 18 with 10 in use: 8 more fit, 9 do not.
    vcpu = Inv(16, 4, 1, 16, 1, 1.5, 10)
    _check([(RP, 'VCPU', 8)], {1: vcpu})
    with pytest.raises(errors.Conflict) as exc:
        _check([(RP, 'VCPU', 9)], {1: vcpu})
    assert 'would exceed the capacity' in exc.value.message


def test_capacity_sums_every_consumer_of_a_request():
    vcpu = Inv(2, 0, 1, 2, 1, 1.0, 0)
    _check([(RP, 'VCPU', 1), (RP, 'VCPU', 1)], {1: vcpu})
    with pytest.raises(errors.Conflict):
        _check([(RP, 'VCPU', 1)] * 3, {1: vcpu})


@pytest.mark.parametrize('amount', [5, 15, 60])
def test_unit_constraints(amount):
    disk = Inv(100, 0, 10, 50, 10, 1.0, 0)
    with pytest.raises(errors.Conflict) as exc:
        _check([(RP, 'DISK_GB', amount)], {2: disk})
    assert 'violate inventory constraints' in exc.value.message


def test_class_missing_from_inventory():
    with pytest.raises(errors.Conflict) as exc:
        _check([(RP, 'DISK_GB', 1)], {1: Inv(8, 0, 1, 8, 1, 1.0, 0)})
    assert ("Inventory for 'DISK_GB' on resource provider '%s' invalid."
            % RP) in exc.value.message


def test_owner_of_new_and_existing_consumers():
    new = allocation.ConsumerRequest('c', {RP: {'VCPU': 1}})
    assert allocation._owner(new, None) == (
        allocation.CONF.placement.incomplete_consumer_project_id,
        allocation.CONF.placement.incomplete_consumer_user_id)
    same = allocation.ConsumerRequest('c', {}, project_id='p', user_id='u')
    assert allocation._owner(same, {'project_id': 'p',
                                    'user_id': 'u'}) == (None, None)
    moved = allocation.ConsumerRequest('c', {}, project_id='q', user_id='u')
    assert allocation._owner(moved, {'project_id': 'p',
                                     'user_id': 'u'}) == ('q', None)
