# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The conductor's end of a snapshot image in the api database."""

import json

from oslo_utils import timeutils
import pytest
import sqlalchemy as sa

from common.db import api_tables
from common.db import snapshot_images
from tests.unit.db import records_fixtures as fx

_IM = api_tables.images


@pytest.fixture
def api(tmp_path):
    database = fx.api_database(tmp_path)
    yield database
    database.dispose()


def _add(api, uuid, status='queued', instance_uuid='inst-1'):
    def insert(ctx):
        ctx.session.execute(_IM.insert().values(
            uuid=uuid, name=uuid, status=status, visibility='private',
            tags='[]', properties=json.dumps({
                'image_type': 'snapshot', 'instance_uuid': instance_uuid}),
            created_at=timeutils.utcnow()))
    api.writer(insert)(fx.ctxt())


def _rows(api):
    def read(ctx):
        return {r.uuid: (r.status, r.size, r.checksum) for r in
                ctx.session.execute(sa.select(_IM))}
    return api.reader(read)(fx.ctxt())


def test_a_finished_snapshot_becomes_active(api):
    _add(api, 'img-1')
    assert snapshot_images.finish_image(
        fx.ctxt(), api, 'img-1',
        {'status': 'active', 'size': 12, 'checksum': 'c' * 32})
    assert _rows(api) == {'img-1': ('active', 12, 'c' * 32)}


def test_a_failed_snapshot_deletes_only_a_pending_image(api):
    _add(api, 'img-1')
    _add(api, 'img-2', status='active')
    assert snapshot_images.finish_image(fx.ctxt(), api, 'img-1', None)
    assert not snapshot_images.finish_image(fx.ctxt(), api, 'img-2', None)
    assert not snapshot_images.finish_image(fx.ctxt(), api, 'gone', None)
    assert list(_rows(api)) == ['img-2']


def test_only_snapshot_fields_may_be_set(api):
    _add(api, 'img-1')
    with pytest.raises(ValueError, match='owner'):
        snapshot_images.finish_image(fx.ctxt(), api, 'img-1',
                                     {'owner': 'me'})


def test_pending_images_of_an_instance_are_dropped(api):
    _add(api, 'img-1')
    _add(api, 'img-2', status='active')
    _add(api, 'img-3', instance_uuid='inst-2')
    assert snapshot_images.drop_pending_of_instance(
        fx.ctxt(), api, 'inst-1') == 1
    assert sorted(_rows(api)) == ['img-2', 'img-3']
