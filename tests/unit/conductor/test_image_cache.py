# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Image pre-caching over an aggregate's hosts (compute API 2.81): who
is asked, and the notifications that report it.
"""

import threading
import uuid as uuid_lib

from oslo_utils import timeutils
import pytest

from common.conf import CONF
from common.db import cell_tables
from services.conductor import image_cache
from tests.unit.conductor import fakes
from tests.unit.db import records_fixtures as fx

IMAGES = ['155d900f-4e14-4e4c-a73d-069cbf4541e6',
          'a2459075-d96c-40d5-893e-577ff92e721c']


class _Computes(object):
    """Each host answers what ``answers`` says (default: cached)."""

    def __init__(self, answers=None):
        self.answers = answers or {}
        self.asked = []
        self._lock = threading.Lock()

    def cache_images(self, ctxt, host, image_ids):
        with self._lock:
            self.asked.append((host, list(image_ids)))
        answer = self.answers.get(host, 'cached')
        if isinstance(answer, Exception):
            raise answer
        return dict.fromkeys(image_ids, answer)


@pytest.fixture
def world(tmp_path):
    made = fakes.World(tmp_path, hosts=('h1', 'h2', 'h3', 'h4'))
    for host, down, forced in (('h1', False, False), ('h2', False, False),
                               ('h3', True, False), ('h4', False, True)):
        _service(made, host, down, forced)
    made.computes = _Computes()
    made.compute.cache_images = made.computes.cache_images
    yield made
    made.close()
    CONF.clear_override('precache_concurrency', group='image_cache')


def _service(world, host, down, forced):
    seen = timeutils.utcnow() - timeutils.datetime.timedelta(
        seconds=3600 if down else 0)

    def insert(ctx):
        ctx.session.execute(cell_tables.services.insert().values(
            uuid=str(uuid_lib.uuid4()), host=host, binary='berth-compute',
            topic='compute', report_count=1, disabled=False,
            forced_down=forced, version=0, deleted=0,
            created_at=seen, last_seen_up=seen))
    world.cell1.writer(insert)(fx.ctxt())


def _aggregate(hosts):
    return {'id': 7, 'uuid': 'f5bc1f2f-2d54-4ef5-9b1b-a7b8e74b5fbf',
            'name': 'fast', 'hosts': list(hosts), 'metadata': {'io': 'ssd'}}


def _progress(world):
    return {p['nova_object.data']['host']: p['nova_object.data']
            for _prio, event, p in world.notifier.sent
            if event == 'aggregate.cache_images.progress'}


def test_up_hosts_are_asked_and_every_host_is_reported(world):
    world.computes.answers['h2'] = 'existing'
    image_cache.cache_images(world.manager, fx.ctxt(),
                             _aggregate(['h1', 'h2', 'h3', 'h4', 'gone']),
                             IMAGES)
    assert sorted(world.computes.asked) == [('h1', IMAGES), ('h2', IMAGES)]
    events = [event for _p, event, _d in world.notifier.sent]
    assert events[0] == 'aggregate.cache_images.start'
    assert events[-1] == 'aggregate.cache_images.end'
    assert events.count('aggregate.cache_images.progress') == 5
    start = world.notifier.sent[0][2]
    assert start['nova_object.name'] == 'AggregatePayload'
    assert start['nova_object.data'] == _aggregate(
        ['h1', 'h2', 'h3', 'h4', 'gone'])
    progress = _progress(world)
    # NOTE: Nova's words: cached and existing images are in the cache;
    # a down, forced down or unknown host skips them all (failed).
    assert progress['h1']['images_cached'] == sorted(IMAGES)
    assert progress['h2']['images_cached'] == sorted(IMAGES)
    for host in ('h3', 'h4', 'gone'):
        assert progress[host]['images_failed'] == sorted(IMAGES), host
        assert progress[host]['images_cached'] == []
    assert sorted(p['index'] for p in progress.values()) == [1, 2, 3, 4, 5]
    assert {p['total'] for p in progress.values()} == {5}


def test_a_host_that_fails_does_not_stop_the_others(world):
    world.computes.answers['h1'] = RuntimeError('timed out')
    CONF.set_override('precache_concurrency', 2, group='image_cache')
    image_cache.cache_images(world.manager, fx.ctxt(),
                             _aggregate(['h1', 'h2']), IMAGES[:1])
    progress = _progress(world)
    assert progress['h1']['images_failed'] == IMAGES[:1]
    assert progress['h2']['images_cached'] == IMAGES[:1]


def test_the_manager_hands_the_cast_over(world):
    world.manager.cache_images(fx.ctxt(), _aggregate(['h1']), IMAGES)
    assert world.computes.asked == [('h1', IMAGES)]
