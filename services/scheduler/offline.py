# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The scheduling pipeline built inside another process (berth-manage).

Dry runs (``scheduler explain``, ``capacity headroom``, ``capacity
what-if``) need the scheduler's pipeline, not a running scheduler: the
same host-state source (the api and cell databases), placement client,
request filters, host filters and weighers as
:class:`services.scheduler.manager.SchedulerManager` builds, from the
same configuration. They answer against an all-in-one (whose in-process
``fake://`` transport no other process reaches) and against any
deployment whose configuration the caller has. Nothing is claimed.

Before building, :func:`check_reachable` looks at the databases and
placement with a short timeout, so that an unreachable cloud fails in
seconds with one line rather than after oslo.db's retries.
"""

import logging
import os
import socket
from urllib import parse

import sqlalchemy as sa

from common.conf import CONF
from common.placement import client as placement_client
from services.scheduler.client import placement as placement_mod
from services.scheduler import host_manager as host_manager_mod
from services.scheduler import loading
from services.scheduler import scheduling

LOG = logging.getLogger(__name__)

#: Seconds each reachability probe (TCP connect) may take.
PROBE_TIMEOUT = 3.0
#: Seconds a placement call of a dry run may take.
PLACEMENT_TIMEOUT = 8
_DEFAULT_PORTS = {'mysql': 3306, 'postgresql': 5432, 'http': 80,
                  'https': 443}


class Unreachable(Exception):
    """A database or placement cannot be reached; the message says which.
    """


def _probe(what, host, port, greets=False):
    """TCP connect; with ``greets``, the server's first bytes too (a
    MySQL server speaks first: a proxy that accepts and then drops the
    connection is caught here, not after oslo.db's connect timeout).
    """
    try:
        with socket.create_connection((host, port),
                                      timeout=PROBE_TIMEOUT) as sock:
            if greets and not sock.recv(1):
                raise ConnectionResetError(104, 'closed without a greeting')
    except OSError as exc:
        raise Unreachable('%s at %s:%s is unreachable: %s' % (
            what, host, port, exc.strerror or exc))


def _probe_database(what, url):
    if not url:
        raise Unreachable('%s: no connection is configured' % what)
    parsed = sa.engine.make_url(url)
    backend = parsed.get_backend_name()
    if backend == 'sqlite':
        path = parsed.database
        if path and path != ':memory:' and not os.path.exists(path):
            raise Unreachable('%s: %s does not exist' % (what, path))
        return
    if parsed.query.get('unix_socket'):
        return
    _probe(what, parsed.host or 'localhost',
           parsed.port or _DEFAULT_PORTS.get(backend, 0),
           greets=backend == 'mysql')


def _placement_url(conf):
    group = conf.placement
    for name in ('endpoint_override', 'endpoint'):
        try:
            value = getattr(group, name)
        except Exception:
            continue
        if value:
            return value
    return None


def check_reachable(conf=None):
    """Raise :class:`Unreachable` unless the api and cell databases and
    placement (when its URL is configured) answer a TCP connect within
    :data:`PROBE_TIMEOUT` seconds each.
    """
    conf = conf or CONF
    _probe_database('the api database', conf.api_database.connection)
    if conf.database.connection:
        _probe_database('the cell database', conf.database.connection)
    url = _placement_url(conf)
    if url:
        parsed = parse.urlsplit(url)
        _probe('placement', parsed.hostname or 'localhost',
               parsed.port or _DEFAULT_PORTS.get(parsed.scheme, 80))


def fail_fast(conf=None, placement_timeout=PLACEMENT_TIMEOUT):
    """Keep a dry run's waits short: no database reconnect loop, and a
    placement timeout of ``placement_timeout`` seconds unless set lower.
    """
    conf = conf or CONF
    for group in ('api_database', 'database'):
        conf.set_override('max_retries', 0, group=group)
    timeout = conf.placement.timeout
    if not timeout or timeout > placement_timeout:
        conf.set_override('timeout', placement_timeout, group='placement')


def build(conf=None, source=None, placement=None):
    """The scheduling pipeline, as the scheduler service builds it.

    :param source: a HostSource; the databases when not given.
    :param placement: a SchedulerPlacementClient; one from
        ``[placement]`` when not given.
    :returns: a :class:`services.scheduler.scheduling.Scheduler`.
    :raises loading.SchedulerHostFilterNotFound: unknown filter name.
    """
    conf = conf or CONF
    if source is None:
        from services.scheduler.sources import database
        source = database.DatabaseHostSource(conf=conf)
    if placement is None:
        placement = placement_mod.SchedulerPlacementClient(
            placement_client.PlacementClient(conf))
    return scheduling.Scheduler(
        host_manager_mod.HostManager(source), placement,
        loading.load_filters(conf.filter_scheduler.enabled_filters),
        loading.load_weighers(conf.filter_scheduler.weight_classes))


def explain(scheduler, ctxt, spec):
    """The dry run of ``spec``: the explanation dict, as the scheduler's
    ``explain`` RPC answers it (``selected`` empty when nothing fits).
    """
    try:
        _sel, explanation = scheduler.select_destinations(
            ctxt, spec, [], return_alternates=False, dry_run=True)
    except scheduling.NoValidHost as exc:
        explanation = exc.explanation
    return explanation
