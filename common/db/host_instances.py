# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A compute agent's copy of its host's instances, kept in sync cheaply.

The resource tracker rebuilds a node's usage from the instances the cell
database says are on it, every period. Sending every instance every time
was most of a busy node's update; here the conductor answers what changed
since the agent's last look, plus the uuids of every live instance (which
alone say what left), in the few fields the tracker reads.
"""

from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import api as db_api
from common.db import cell_tables
from common.db import instance_records
from common.db import migration_records

_IN = cell_tables.instances
# NOTE: the migrations' query names each host twice (source or
# destination): two IN lists of this many stay under the 999 bound
# parameters of older SQLite builds.
HOSTS_PER_QUERY = 250

# NOTE: the Instance fields a compute agent's resource tracker reads
# (services/compute/usage.py). Sync replies carry only these, decoded
# straight from the row: building and converting whole Instance objects
# was most of the cost of listing a 500-instance host.
TRACKED_FIELDS = ('uuid', 'host', 'node', 'project_id', 'image_ref',
                  'vm_state', 'task_state', 'flavor', 'numa_topology',
                  'pci_requests', 'image_meta', 'migration_context')
_TRACKED_JSON = {'flavor': None, 'numa_topology': None, 'pci_requests': [],
                 'image_meta': {}, 'migration_context': None}
_TRACKED_PLAIN = tuple(n for n in TRACKED_FIELDS if n not in _TRACKED_JSON)


def _tracked(rows):
    """The sync reply's dicts of ``rows``.

    NOTE: a JSON text is decoded once per reply: the instances of a host
    mostly share a few flavors and empty lists, and decoding was what a
    full sync spent most on. Rows may thus share values; the reply is
    serialized at once, and in-process callers must only read it.
    """
    decoded = {}
    result = []
    for row in rows:
        data = row._mapping
        values = {name: data[name] for name in _TRACKED_PLAIN}
        for name, default in _TRACKED_JSON.items():
            key = (name, data[name])
            if key not in decoded:
                decoded[key] = instance_records.decode_json(
                    data[name], default, '%s of %s' % (name, row.uuid))
            values[name] = decoded[key]
        values['deleted'] = False
        result.append(values)
    return result


def _changed_since(stamps, since):
    """True when a row's last change is at or after ``since``.

    NOTE: a row never updated since its creation has only created_at; a
    row with neither (written by hand) cannot be judged and counts as
    changed.
    """
    stamp = stamps.updated_at or stamps.created_at
    return since is None or stamp is None or stamp >= since


def _moves(ctx, hosts, columns):
    """The moves in progress to or from each of ``hosts``: {host:
    (Migration primitives, the tracked rows of their instances that are
    not on that host)}; the tracker counts a move on both of its nodes
    until it ends.

    NOTE: always whole: a host has few moves at a time, and the rows of
    instances elsewhere are not in the host's incremental copy.
    """
    by_host = {host: ([], []) for host in hosts}
    migrations = migration_records.counted_for_hosts(ctx, hosts)
    if not migrations:
        return by_host
    uuids = sorted({m.instance_uuid for m in migrations})
    rows = {}
    for chunk in db_api.chunks(uuids):
        for row in ctx.session.execute(sa.select(*columns).where(
                _IN.c.uuid.in_(chunk), _IN.c.deleted == 0)):
            rows[row.uuid] = row
    tracked = dict(zip(rows, _tracked(rows.values())))
    for migration in migrations:
        primitive = migration.to_primitive()
        row = tracked.get(migration.instance_uuid)
        for host in {migration.source_compute, migration.dest_compute}:
            if host not in by_host:
                continue
            listed, moving = by_host[host]
            listed.append(primitive)
            if row is not None and row['host'] != host and all(
                    r['uuid'] != row['uuid'] for r in moving):
                moving.append(row)
    return by_host


def _changed_rows(ctx, columns, live, stamps, since):
    """The tracked rows of ``stamps`` changed since ``since`` (every row
    of the hosts in ``live`` when all of them are).
    """
    changed = [s.uuid for s in stamps if _changed_since(s, since)]
    if len(changed) == len(stamps):
        return list(ctx.session.execute(sa.select(*columns).where(*live)))
    rows = []
    for chunk in db_api.chunks(changed):
        # NOTE: the hosts again: on SQLite each SELECT reads its own
        # snapshot, and a row that moved away in between must not come
        # back as its old host's.
        rows.extend(ctx.session.execute(sa.select(*columns).where(
            _IN.c.uuid.in_(chunk), *live)))
    return rows


def sync_hosts(ctxt, database, since_by_host):
    """What compute agents need to keep their copies of several hosts'
    instances, read in one transaction.

    :param since_by_host: {host: an ISO 8601 time or a datetime (naive
        UTC), or None}: for each host only the live rows whose
        ``updated_at`` (``created_at`` when never updated) is at or after
        it; None for every live row.
    :returns: {host: reply}, each as :func:`sync_host_instances` answers.
    """
    since_by_host = {host: instance_records.to_datetime(since)
                     for host, since in since_by_host.items()}
    columns = [_IN.c[name] for name in TRACKED_FIELDS]

    def fetch(ctx):
        as_of = instance_records.iso_time(timeutils.utcnow())
        replies = {}
        for hosts in db_api.chunks(sorted(since_by_host), HOSTS_PER_QUERY):
            replies.update(_sync_chunk(ctx, hosts, since_by_host, columns,
                                       as_of))
        return replies
    return database.reader(fetch)(ctxt)


def _sync_chunk(ctx, hosts, since_by_host, columns, as_of):
    live = _IN.c.host.in_(hosts), _IN.c.deleted == 0
    stamps = {host: [] for host in hosts}
    for stamp in ctx.session.execute(sa.select(
            _IN.c.uuid, _IN.c.host, _IN.c.updated_at,
            _IN.c.created_at).where(*live)):
        stamps[stamp.host].append(stamp)
    by_since = {}
    for host in hosts:
        by_since.setdefault(since_by_host[host], []).append(host)
    rows = {host: [] for host in hosts}
    for since, group in by_since.items():
        group_live = _IN.c.host.in_(group), _IN.c.deleted == 0
        group_stamps = [s for host in group for s in stamps[host]]
        for row in _changed_rows(ctx, columns, group_live, group_stamps,
                                 since):
            rows[row.host].append(row)
    moves = _moves(ctx, hosts, columns)
    accepted = migration_records.accepted_to_hosts(ctx, hosts)
    return {host: {'instances': _tracked(rows[host]),
                   'uuids': [s.uuid for s in stamps[host]],
                   'migrations': moves[host][0], 'moving': moves[host][1],
                   'accepted': accepted.get(host, []), 'as_of': as_of}
            for host in hosts}


def sync_host_instances(ctxt, database, host, changed_since=None):
    """What a compute agent needs to keep its copy of ``host``'s instances.

    :param changed_since: an ISO 8601 time or a datetime (naive UTC):
        return only the live rows whose ``updated_at`` (``created_at``
        when never updated) is at or after it; None for every live row.
    :returns: {'instances': [dicts of :data:`TRACKED_FIELDS` (and
        ``deleted``) of those rows], 'uuids': [the uuid of every live
        instance on ``host``], 'as_of': this process's clock (ISO), read
        before the rows were: the clock the conductors stamp rows with
        here, 'migrations': the moves in progress to or from ``host``
        (Migration primitives), 'moving': the tracked rows of their
        instances that are not on ``host``, 'accepted': the uuids of the
        migrations to ``host`` not started yet (their pre-check claims
        stand)}. Which rows left the host is told by ``uuids``, whatever
        their timestamps say.
    """
    return sync_hosts(ctxt, database, {host: changed_since})[host]
