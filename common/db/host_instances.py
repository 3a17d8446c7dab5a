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

from common.db import cell_tables
from common.db import instance_records
from common.db import migration_records

_IN = cell_tables.instances

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


def _moves(ctx, host, columns):
    """The moves in progress to or from ``host`` (Migration primitives),
    and the tracked rows of their instances that are not on ``host``:
    the tracker counts a move on both of its nodes until it ends.

    NOTE: always whole: a host has few moves at a time, and the rows of
    instances elsewhere are not in the host's incremental copy.
    """
    migrations = migration_records.counted_for_host(ctx, host)
    if not migrations:
        return [], []
    uuids = sorted({m.instance_uuid for m in migrations})
    rows = []
    chunk = instance_records.CHUNK
    for start in range(0, len(uuids), chunk):
        rows.extend(ctx.session.execute(sa.select(*columns).where(
            _IN.c.uuid.in_(uuids[start:start + chunk]), _IN.c.deleted == 0,
            sa.or_(_IN.c.host != host, _IN.c.host.is_(None)))))
    return [m.to_primitive() for m in migrations], _tracked(rows)


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
    since = instance_records.to_datetime(changed_since)
    columns = [_IN.c[name] for name in TRACKED_FIELDS]

    def fetch(ctx):
        as_of = timeutils.utcnow()
        live = _IN.c.host == host, _IN.c.deleted == 0
        stamps = list(ctx.session.execute(sa.select(
            _IN.c.uuid, _IN.c.updated_at, _IN.c.created_at).where(*live)))
        changed = [s.uuid for s in stamps if _changed_since(s, since)]
        if len(changed) == len(stamps):
            rows = ctx.session.execute(sa.select(*columns).where(*live))
        else:
            rows = []
            chunk = instance_records.CHUNK
            for start in range(0, len(changed), chunk):
                # NOTE: the host again: on SQLite each SELECT reads its
                # own snapshot, and a row that moved away in between must
                # not come back as this host's.
                rows.extend(ctx.session.execute(sa.select(*columns).where(
                    _IN.c.uuid.in_(changed[start:start + chunk]), *live)))
        migrations, moving = _moves(ctx, host, columns)
        return {'instances': _tracked(rows),
                'uuids': [s.uuid for s in stamps],
                'migrations': migrations, 'moving': moving,
                'accepted': migration_records.accepted_to_host(ctx, host),
                'as_of': instance_records.iso_time(as_of)}
    return database.reader(fetch)(ctxt)
