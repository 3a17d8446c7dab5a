# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The ``db`` service-group driver: records in the cell's services table.

Services that hold database credentials (scheduler, conductor) use it
directly on ``[database] connection``. Compute agents have no database
access; they heartbeat through the conductor, which calls this driver.
Records are soft-deleted rows (``deleted = 0`` while live), and the
heartbeat goes to ``last_seen_up`` so that an administrator's changes
(which move ``updated_at``) never look like a heartbeat.
"""

import uuid

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from common import context as berth_context
from common.db import cell_tables
from common.db import cells
from common import exception
from common import servicegroup

_SERVICES = cell_tables.services
_UPDATABLE = ('disabled', 'disabled_reason', 'forced_down')


def _record(row):
    return servicegroup.ServiceRecord(
        host=row.host, binary=row.binary, topic=row.topic,
        report_count=row.report_count, disabled=bool(row.disabled),
        disabled_reason=row.disabled_reason,
        forced_down=bool(row.forced_down), created_at=row.created_at,
        updated_at=row.last_seen_up or row.created_at)


def _live(host, binary):
    return sa.and_(_SERVICES.c.host == host, _SERVICES.c.binary == binary,
                   _SERVICES.c.deleted == 0)


class DatabaseDriver(servicegroup.ServiceGroupDriver):
    """Service records on the local cell database."""

    def __init__(self, database=None):
        """
        :param database: a :class:`common.db.api.Database`; default the
            one of ``[database] connection``.
        """
        self.database = database or cells.local_cell_database()

    def _read(self, fn, *args):
        return self.database.reader(fn)(
            berth_context.get_admin_context(), *args)

    # NOTE: many services heartbeat into one table; on MariaDB two of
    # them may deadlock, which is retried rather than reported.
    @oslo_db_api.wrap_db_retry(max_retries=5, retry_on_deadlock=True)
    def _write(self, fn, *args):
        return self.database.writer(fn)(
            berth_context.get_admin_context(), *args)

    @staticmethod
    def _select_one(ctx, host, binary):
        return ctx.session.execute(
            sa.select(_SERVICES).where(_live(host, binary))).first()

    def join(self, host, binary, topic):
        """See :meth:`ServiceGroupDriver.join`."""
        def create(ctx):
            row = self._select_one(ctx, host, binary)
            if row is None:
                now = timeutils.utcnow()
                ctx.session.execute(_SERVICES.insert().values(
                    uuid=str(uuid.uuid4()), host=host, binary=binary,
                    topic=topic, report_count=0, disabled=False,
                    forced_down=False, version=0, created_at=now,
                    deleted=0))
                row = self._select_one(ctx, host, binary)
            return _record(row)
        try:
            return self._write(create)
        except db_exc.DBDuplicateEntry:
            # NOTE: two workers of one service joined at once; the other
            # one's record is ours.
            return self.get(host, binary)

    def report(self, host, binary):
        """See :meth:`ServiceGroupDriver.report`."""
        def heartbeat(ctx):
            result = ctx.session.execute(
                _SERVICES.update().where(_live(host, binary)).values(
                    report_count=_SERVICES.c.report_count + 1,
                    last_seen_up=timeutils.utcnow()))
            if not result.rowcount:
                raise exception.ServiceNotFound(host=host, binary=binary)
            return _record(self._select_one(ctx, host, binary))
        return self._write(heartbeat)

    def get(self, host, binary):
        """See :meth:`ServiceGroupDriver.get`."""
        def fetch(ctx):
            row = self._select_one(ctx, host, binary)
            return None if row is None else _record(row)
        return self._read(fetch)

    def get_all(self, binary=None):
        """See :meth:`ServiceGroupDriver.get_all`."""
        def fetch(ctx):
            query = sa.select(_SERVICES).where(_SERVICES.c.deleted == 0)
            if binary is not None:
                query = query.where(_SERVICES.c.binary == binary)
            return [_record(r) for r in ctx.session.execute(
                query.order_by(_SERVICES.c.host))]
        return self._read(fetch)

    def update(self, host, binary, **values):
        """See :meth:`ServiceGroupDriver.update`."""
        unknown = set(values) - set(_UPDATABLE)
        if unknown:
            raise ValueError('not updatable: %s' % ', '.join(sorted(unknown)))

        def change(ctx):
            result = ctx.session.execute(
                _SERVICES.update().where(_live(host, binary)).values(
                    updated_at=timeutils.utcnow(), **values))
            if not result.rowcount:
                raise exception.ServiceNotFound(host=host, binary=binary)
            return _record(self._select_one(ctx, host, binary))
        return self._write(change)


servicegroup.register_driver('db', DatabaseDriver)
