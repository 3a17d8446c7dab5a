# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The capacity formula, in Python and in SQL, and inventory records."""

import pytest
import sqlalchemy as sa

from services.placement.objects import inventory as inv_obj


def _record(**kw):
    return inv_obj.with_defaults(dict({'total': 10}, **kw))


def test_defaults_fill_every_field():
    record = inv_obj.with_defaults({'total': 4})
    assert record == {'total': 4, 'reserved': 0, 'min_unit': 1,
                      'max_unit': 2147483647, 'step_size': 1,
                      'allocation_ratio': 1.0}


def test_ratio_is_always_a_float():
    assert isinstance(_record(allocation_ratio=2)['allocation_ratio'], float)


@pytest.mark.parametrize('total, reserved, ratio, expected', [
    (10, 0, 1.0, 10),
    (10, 2, 1.0, 8),
    (24, 0, 16.0, 384),
    (10, 1, 1.5, 13),     # 13.5: fractions are dropped
    (10, 10, 2.0, 0),
])
def test_capacity(total, reserved, ratio, expected):
    assert inv_obj.capacity(total, reserved, ratio) == expected


@pytest.mark.parametrize('record, used, amount, expected', [
    (_record(), 0, 10, True),
    (_record(), 1, 10, False),                     # not enough left
    (_record(min_unit=2), 0, 1, False),            # below min_unit
    (_record(max_unit=4), 0, 5, False),            # above max_unit
    (_record(step_size=4), 0, 6, False),           # not a step multiple
    (_record(step_size=4), 0, 8, True),
    (_record(allocation_ratio=2.0), 15, 5, True),  # overcommit
])
def test_fits(record, used, amount, expected):
    assert inv_obj.fits(record, used, amount) is expected


@pytest.mark.parametrize('reserved, may_equal, problem', [
    (9, False, None),
    (10, False, 'greater than or equal to total'),
    (10, True, None),
    (11, True, 'greater than total'),
])
def test_capacity_problem(reserved, may_equal, problem):
    found = inv_obj.capacity_problem(_record(reserved=reserved), may_equal)
    if problem is None:
        assert found is None
    else:
        assert problem in found


def test_sql_and_python_agree():
    """fits_sql() accepts exactly what fits() accepts, on SQLite."""
    engine = sa.create_engine('sqlite://')
    meta = sa.MetaData()
    inv = sa.Table('inv', meta, *[sa.Column(name, sa.Float if name ==
                                            'allocation_ratio' else sa.Integer)
                                  for name in inv_obj.FIELDS])
    meta.create_all(engine)
    cases = [(_record(total=t, reserved=r, step_size=s,
                      allocation_ratio=a), used, amount)
             for t, r, s, a in [(10, 0, 1, 1.0), (10, 1, 2, 1.5),
                                (7, 3, 1, 0.5)]
             for used in (0, 3)
             for amount in range(1, 16)]
    with engine.connect() as conn:
        for record, used, amount in cases:
            conn.execute(inv.delete())
            conn.execute(inv.insert().values(**record))
            found = conn.execute(sa.select(sa.func.count()).select_from(inv)
                                 .where(inv_obj.fits_sql(amount, used, inv))
                                 ).scalar()
            assert bool(found) is inv_obj.fits(record, used, amount), (
                record, used, amount)
