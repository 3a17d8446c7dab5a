# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Provider listing stays one SQL statement, whatever the filters."""

import uuid

import pytest
from sqlalchemy import event

from common import context
from services.placement.db.api import placement_db
from services.placement.objects import catalog
from services.placement.objects import inventory as inv_obj
from services.placement.objects import resource_provider as rp_obj
from services.placement import query
from tests.unit.placement import fixtures


@pytest.fixture
def ctx():
    fixtures.setup_app()
    fixtures.wipe_database()
    return context.get_admin_context()


class _Counter(object):
    """Counts the SELECT statements run on the placement engine."""

    def __init__(self):
        self.count = 0

    def __call__(self, conn, cursor, statement, *args, **kwargs):
        if statement.lstrip().upper().startswith('SELECT'):
            self.count += 1

    def __enter__(self):
        event.listen(placement_db.engine(), 'before_cursor_execute', self)
        return self

    def __exit__(self, *exc):
        event.remove(placement_db.engine(), 'before_cursor_execute', self)


def _providers(ctx, n):
    vcpu = catalog.RESOURCE_CLASSES.id_for(ctx, 'VCPU')
    made = []
    for i in range(n):
        rp = rp_obj.create(ctx, str(uuid.uuid4()), 'rp-%d' % i)
        inv_obj.add(ctx, rp, vcpu, inv_obj.with_defaults({'total': i + 1}))
        made.append(rp)
    return made


def test_list_is_one_statement(ctx):
    _providers(ctx, 30)
    catalog.RESOURCE_CLASSES.id_for(ctx, 'VCPU')
    catalog.TRAITS.id_for(ctx, 'HW_CPU_X86_AVX')
    filters = dict(
        resources={'VCPU': 20},
        required=query.RequiredTraits(frozenset(), (),
                                      frozenset(['HW_CPU_X86_AVX'])),
        member_of=query.MemberOf((), frozenset([str(uuid.uuid4())])))
    with _Counter() as counter:
        found = rp_obj.list_providers(ctx, **filters)
    assert len(found) == 11
    # NOTE: the catalogue cache is warm, so nothing but the list runs.
    assert counter.count == 1


def test_move_subtree_updates_every_root(ctx):
    root = rp_obj.create(ctx, str(uuid.uuid4()), 'root')
    other = rp_obj.create(ctx, str(uuid.uuid4()), 'other')
    child = rp_obj.create(ctx, str(uuid.uuid4()), 'child', root['uuid'])
    leaf = rp_obj.create(ctx, str(uuid.uuid4()), 'leaf', child['uuid'])
    rp_obj.update(ctx, child, 'child', other['uuid'], may_reparent=True)
    assert rp_obj.get_by_uuid(ctx, leaf['uuid'])['root_provider_uuid'] == (
        other['uuid'])
    assert [p['uuid'] for p in rp_obj.list_providers(
        ctx, in_tree=root['uuid'])] == [root['uuid']]
