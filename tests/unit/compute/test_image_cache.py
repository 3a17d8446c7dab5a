# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Image pre-caching on one host (compute API 2.81): the drivers' caches
and what the agent answers the conductor.
"""

import json
import os
import types

import pytest

from services.compute import image_cache
from services.compute import manager
from services.compute.virt import driver
from services.compute.virt import fake
from services.compute.virt import local

IMAGE_A = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
IMAGE_B = 'a2459075-d96c-40d5-893e-577ff92e721c'


def test_the_fake_driver_remembers_each_hosts_images(conf):
    conf.config(group='fake_driver', host_count=2)
    drv = fake.FakeDriver(conf.conf)
    assert drv.cache_image('cn-0', IMAGE_A) is True
    assert drv.cache_image('cn-0', IMAGE_A) is False
    assert drv.cached_images == {'cn-0': {IMAGE_A}, 'cn-1': set()}


def test_the_local_driver_records_the_image_under_base(conf, tmp_path):
    conf.config(instances_path=str(tmp_path))
    drv = local.LocalDriver(conf.conf)
    assert drv.cache_image('cn', IMAGE_A) is True
    assert drv.cache_image('cn', IMAGE_A) is False
    with open(os.path.join(str(tmp_path), '_base', IMAGE_A)) as f:
        assert json.load(f) == {'image_id': IMAGE_A, 'host': 'cn'}
    # NOTE: the cache is no guest.
    assert drv.list_guests('cn') == {}


def test_the_local_driver_refuses_a_path_for_an_image_id(conf, tmp_path):
    conf.config(instances_path=str(tmp_path))
    agent = types.SimpleNamespace(driver=local.LocalDriver(conf.conf))
    assert image_cache.cache_images(agent, 'cn', ['../etc']) == {
        '../etc': 'error'}
    assert not os.path.exists(os.path.join(str(tmp_path), '_base'))


class _Driver(fake.FakeDriver):
    """The fake driver whose download of IMAGE_B fails."""

    def cache_image(self, host, image_id):
        if image_id == IMAGE_B:
            raise IOError('image service unreachable')
        return super().cache_image(host, image_id)


def test_each_image_is_answered_on_its_own(conf):
    agent = types.SimpleNamespace(driver=_Driver(conf.conf))
    agent.driver.cache_image('cn', IMAGE_A)
    assert image_cache.cache_images(agent, 'cn', [IMAGE_A, IMAGE_B]) == {
        IMAGE_A: 'existing', IMAGE_B: 'error'}


def test_a_driver_without_a_cache_answers_unsupported(conf):
    class NoCache(fake.FakeDriver):
        cache_image = driver.ComputeDriver.cache_image

    agent = types.SimpleNamespace(driver=NoCache(conf.conf))
    assert image_cache.cache_images(agent, 'cn', [IMAGE_A]) == {
        IMAGE_A: 'unsupported'}


def test_the_manager_serves_only_its_hosts(conf):
    drv = fake.FakeDriver(conf.conf)
    agent = types.SimpleNamespace(driver=drv, hosts=['cn'],
                                  trackers={'cn': None})
    mgr = manager.ComputeManager(agent)
    assert mgr.cache_images(None, [IMAGE_A], host='cn') == {
        IMAGE_A: 'cached'}
    with pytest.raises(manager.UnknownHost):
        mgr.cache_images(None, [IMAGE_A], host='elsewhere')
    assert drv.cached_images == {'cn': {IMAGE_A}}
