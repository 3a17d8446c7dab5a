# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Custom resource class ids and lifecycle, below the HTTP layer."""

from unittest import mock

from oslo_db import exception as db_exc
import pytest

from common import context
from services.placement import errors
from services.placement.objects import catalog
from services.placement.objects import resource_class as rc_obj
from tests.unit.placement import fixtures


@pytest.fixture
def ctx():
    fixtures.setup_app()
    fixtures.wipe_database()
    return context.get_admin_context()


def test_custom_ids_start_at_the_custom_range(ctx):
    first = rc_obj.create(ctx, 'CUSTOM_A')
    second = rc_obj.create(ctx, 'CUSTOM_B')
    assert first['id'] == catalog.CUSTOM_RC_MIN_ID
    assert second['id'] == catalog.CUSTOM_RC_MIN_ID + 1
    # The cache sees the new class at once.
    assert catalog.RESOURCE_CLASSES.id_for(ctx, 'CUSTOM_B') == second['id']


def test_ids_continue_after_the_highest(ctx):
    rc_obj.create(ctx, 'CUSTOM_A')
    rc_obj.create(ctx, 'CUSTOM_B')
    rc_obj.destroy(ctx, 'CUSTOM_A')
    third = rc_obj.create(ctx, 'CUSTOM_C')
    assert third['id'] == catalog.CUSTOM_RC_MIN_ID + 2


def test_duplicate_name_is_a_conflict(ctx):
    rc_obj.create(ctx, 'CUSTOM_A')
    with pytest.raises(rc_obj.ResourceClassExists) as exc:
        rc_obj.create(ctx, 'CUSTOM_A')
    assert exc.value.code == errors.DUPLICATE_NAME


def test_id_race_is_retried(ctx):
    real = rc_obj._create
    calls = []

    def racing(c, name):
        calls.append(name)
        if len(calls) == 1:
            # Another writer took our id in between.
            raise db_exc.DBDuplicateEntry(columns=['PRIMARY'])
        return real(c, name)

    with mock.patch.object(rc_obj, '_create', racing):
        created = rc_obj.create(ctx, 'CUSTOM_RACY')
    assert len(calls) == 2
    assert rc_obj.get_by_name(ctx, 'CUSTOM_RACY')['id'] == created['id']


def test_name_race_is_a_conflict(ctx):
    rc_obj.create(ctx, 'CUSTOM_TAKEN')
    with mock.patch.object(rc_obj, '_create',
                           side_effect=db_exc.DBDuplicateEntry(['name'])):
        with pytest.raises(rc_obj.ResourceClassExists):
            rc_obj.create(ctx, 'CUSTOM_TAKEN')


def test_rename_keeps_the_id_and_clears_the_cache(ctx):
    created = rc_obj.create(ctx, 'CUSTOM_OLD')
    assert catalog.RESOURCE_CLASSES.id_for(ctx, 'CUSTOM_OLD')
    renamed = rc_obj.rename(ctx, 'CUSTOM_OLD', 'CUSTOM_NEW')
    assert renamed['id'] == created['id']
    assert catalog.RESOURCE_CLASSES.name_for(ctx, created['id']) == (
        'CUSTOM_NEW')
    assert catalog.RESOURCE_CLASSES.id_for(ctx, 'CUSTOM_OLD') is None


def test_standard_classes_cannot_change(ctx):
    with pytest.raises(errors.BadRequest):
        rc_obj.rename(ctx, 'VCPU', 'CUSTOM_VCPU')
    with pytest.raises(errors.BadRequest):
        rc_obj.destroy(ctx, 'VCPU')


def test_unknown_class(ctx):
    with pytest.raises(rc_obj.ResourceClassNotFound):
        rc_obj.destroy(ctx, 'CUSTOM_NOPE')
    assert rc_obj.get_by_name(ctx, 'CUSTOM_NOPE') is None


def test_list_has_standard_then_custom(ctx):
    rc_obj.create(ctx, 'CUSTOM_Z')
    names = [rc['name'] for rc in rc_obj.get_all(ctx)]
    assert names[0] == 'VCPU'
    assert names[-1] == 'CUSTOM_Z'
    assert len(names) == len(catalog.os_resource_classes.STANDARDS) + 1
