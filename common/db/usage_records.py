# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The instances a usage period counts, deleted ones included.

An instance counts for a period [begin, end) when it was launched before
``end`` and was not terminated before ``begin`` (a server that never
launched used nothing). Deleted rows are read: a server deleted during
the period used resources until it was. The order is (project_id, uuid)
within a cell, the order usage pages follow (doc/api.md).
"""

import sqlalchemy as sa

from common.db import cell_tables
from common.db import instance_records
from common import exception

_IN = cell_tables.instances


def _after_marker(ctx, query, marker):
    row = ctx.session.execute(sa.select(_IN.c.project_id, _IN.c.uuid).where(
        _IN.c.uuid == marker)).first()
    if row is None:
        raise exception.InstanceNotFound(instance_id=marker)
    return query.where(sa.or_(
        _IN.c.project_id > row.project_id,
        sa.and_(_IN.c.project_id == row.project_id, _IN.c.uuid > row.uuid)))


def active_by_window(ctxt, database, begin, end, project_id=None,
                     limit=None, marker=None):
    """Instances of one cell active in [begin, end), deleted or not.

    :param begin: naive UTC datetime.
    :param end: naive UTC datetime.
    :param marker: the uuid of the last instance of the previous page.
    :raises common.exception.InstanceNotFound: ``marker`` is not in this
        cell.
    """
    def fetch(ctx):
        query = sa.select(_IN).where(
            sa.or_(_IN.c.terminated_at.is_(None),
                   _IN.c.terminated_at > begin),
            _IN.c.launched_at < end).order_by(_IN.c.project_id, _IN.c.uuid)
        if project_id is not None:
            query = query.where(_IN.c.project_id == project_id)
        if marker is not None:
            query = _after_marker(ctx, query, marker)
        if limit is not None:
            query = query.limit(limit)
        return [instance_records.instance_from_row(r)
                for r in ctx.session.execute(query)]
    return database.reader(fetch)(ctxt)
