# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Image pre-caching over the hosts of an aggregate (compute API 2.81).

The API accepted ``POST /os-aggregates/{id}/images`` (the images exist)
and cast ``cache_images`` here with the aggregate as it was then. As
Nova's conductor:

  aggregate.cache_images.start
  -> each host of the aggregate, found in its cell:
       not a compute service, or down -> every image ``skipped``
       else compute.cache_images(host, images)   (a call, long timeout;
            [image_cache] precache_concurrency hosts at once)
       -> aggregate.cache_images.progress (images_cached: cached or
          existing, images_failed: the others; index of total)
  -> one log line of the totals, a warning per image that failed
  -> aggregate.cache_images.end

Nothing is recorded: the API answered 202 already, and an operator reads
the outcome in the notifications and the conductor's log.
"""

import collections
import concurrent.futures
import logging
import threading

import common.conf
from common.db import compute_records
from common import servicegroup

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF

SKIPPED = 'skipped'
# NOTE: what a host answers (services/compute/image_cache.py); the first
# two mean the image is in the host's cache.
SUCCESS = ('cached', 'existing')
COUNTED = ('cached', 'existing', 'error', 'unsupported')
AGGREGATE_FIELDS = ('id', 'uuid', 'name', 'hosts', 'metadata')
PAYLOAD_VERSION = '1.0'

_SERVICEGROUP = servicegroup.API(driver=servicegroup.MemoryDriver())


def _payload(name, data):
    return {'nova_object.name': name, 'nova_object.namespace': 'berth',
            'nova_object.version': PAYLOAD_VERSION,
            'nova_object.data': data}


def aggregate_payload(aggregate):
    """Nova's AggregatePayload of ``aggregate`` (a dict)."""
    return _payload('AggregatePayload', {
        name: aggregate.get(name) for name in AGGREGATE_FIELDS})


def progress_payload(aggregate, host, results, index, total):
    """Nova's AggregateCachePayload: one host's outcome."""
    return _payload('AggregateCachePayload', {
        'aggregate': aggregate_payload(aggregate),
        'host': host,
        'images_cached': sorted(i for i, s in results.items()
                                if s in SUCCESS),
        'images_failed': sorted(i for i, s in results.items()
                                if s not in SUCCESS),
        'index': index, 'total': total})


def _locate(conductor, ctxt, hosts):
    """host -> (cell, compute service record or None) for ``hosts``."""
    found = {}
    wanted = set(hosts)
    for cell in conductor.cells.host_cells(ctxt):
        for service in compute_records.list_services(
                ctxt, conductor.cells.database(cell),
                binary=compute_records.COMPUTE_BINARY):
            if service['host'] in wanted:
                found[service['host']] = (cell, service)
    return found


class _Tally(object):
    """The hosts' answers as they come, each one notified."""

    def __init__(self, conductor, ctxt, aggregate, total):
        self.conductor = conductor
        self.ctxt = ctxt
        self.aggregate = aggregate
        self.total = total
        self.done = 0
        self.counts = collections.Counter()
        self.failures = collections.Counter()
        self.skipped = 0
        self._lock = threading.Lock()

    def host_done(self, host, results):
        with self._lock:
            self.done += 1
            index = self.done
            for image_id, status in results.items():
                self.counts[status] += 1
                if status == 'error':
                    self.failures[image_id] += 1
            if set(results.values()) == {SKIPPED}:
                self.skipped += 1
        self.conductor.notify(self.ctxt, 'aggregate.cache_images.progress',
                              progress_payload(self.aggregate, host, results,
                                               index, self.total))


def _ask(compute, ctxt, host, image_ids):
    """One host's answer; every image ``error`` when the call failed."""
    try:
        return compute.cache_images(ctxt, host, image_ids)
    except Exception as exc:
        LOG.warning('Image pre-cache request to %s failed: %s', host, exc)
        return dict.fromkeys(image_ids, 'error')


def cache_images(conductor, ctxt, aggregate, image_ids):
    """Have every host of ``aggregate`` cache ``image_ids``.

    :param aggregate: {id, uuid, name, hosts, metadata}.
    """
    conductor.notify(ctxt, 'aggregate.cache_images.start',
                     aggregate_payload(aggregate))
    hosts = list(aggregate.get('hosts') or [])
    located = _locate(conductor, ctxt, hosts)
    tally = _Tally(conductor, ctxt, aggregate, len(hosts))
    LOG.info('Asking %d host(s) of aggregate %s to pre-cache image(s) %s',
             len(hosts), aggregate.get('id'), ','.join(image_ids))
    workers = CONF.image_cache.precache_concurrency
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for host in hosts:
            cell, service = located.get(host, (None, None))
            if service is None or not _SERVICEGROUP.service_is_up(
                    compute_records.service_record(service)):
                LOG.info('Not asking %s to pre-cache images: it is not an '
                         'up compute service', host)
                tally.host_done(host, dict.fromkeys(image_ids, SKIPPED))
                continue
            compute = conductor.compute_clients.for_cell(cell)
            pool.submit(lambda h=host, c=compute: tally.host_done(
                h, _ask(c, ctxt, h, image_ids)))
    LOG.info('Image pre-cache of %s on aggregate %s done: %s, %d host(s) '
             'skipped', ','.join(image_ids), aggregate.get('id'), ', '.join(
                 '%d %s' % (tally.counts[s], s) for s in COUNTED),
             tally.skipped)
    for image_id, count in sorted(tally.failures.items()):
        LOG.warning('Image %s could not be pre-cached on %d host(s)',
                    image_id, count)
    conductor.notify(ctxt, 'aggregate.cache_images.end',
                     aggregate_payload(aggregate))
