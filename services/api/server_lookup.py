# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Finding servers: build requests first, then the cell their mapping says.

A server is a build request until the conductor gives it a cell (the one
of its host, or cell0 when no host could take it); its instance mapping
says which. Listing merges the build requests with every cell's
instances, newest first; a server seen in both (the conductor created its
instance and has not yet removed the build request) is shown from its
cell.
"""

from common.db import boot_records
from common.db import instance_cells
from common.db import instance_records
from common.db import instance_tags
from common import exception
from services.api import cell_hosts
from services.api import down_cells
from services.api import errors
from services.api import server_filters
from services.api import util


def _cell(ctxt, cell_uuid):
    for cell in cell_hosts.all_cells(ctxt):
        if cell.uuid == cell_uuid:
            return cell
    cell_hosts.forget_cells()
    for cell in cell_hosts.all_cells(ctxt):
        if cell.uuid == cell_uuid:
            return cell
    return None


def _not_found(uuid):
    return errors.NotFound('Instance %s could not be found.' % uuid)


#: servers whose cell this API process remembers (see
#: common/db/instance_cells.py): an action on a server seen before reads
#: its cell's database only, not the api database's mapping too.
KNOWN_CELLS_SIZE = 50000
KNOWN_CELLS = instance_cells.InstanceCells(KNOWN_CELLS_SIZE)


def _mapped_cell(ctxt, uuid):
    """(cell uuid, mapping) of a server in a cell, or (None, the build
    request as an Instance).

    :raises errors.NotFound: no mapping, or a mapping without a cell and
        no build request.
    """
    mapping = boot_records.get_instance_mapping(ctxt, uuid)
    if mapping is None:
        raise _not_found(uuid)
    if mapping['cell_uuid'] is None:
        instance = boot_records.get_build_request(ctxt, uuid)
        if instance is not None:
            return None, instance
        # NOTE: the conductor finished the build request just now; the
        # mapping names the cell from this moment on.
        mapping = boot_records.get_instance_mapping(ctxt, uuid)
        if mapping is None or mapping['cell_uuid'] is None:
            raise _not_found(uuid)
    return mapping['cell_uuid'], mapping


def _cell_down(ctxt, uuid, cell, mapping):
    """The CellDown of a server whose cell does not answer."""
    if mapping is None:
        mapping = boot_records.get_instance_mapping(ctxt, uuid)
        if mapping is None:
            raise _not_found(uuid)
    return down_cells.CellDown(uuid, cell, mapping)


def find(ctxt, uuid, read_deleted=False, fault=True):
    """(Instance, CellMapping or None for a build request) of a server.

    :param read_deleted: also find a deleted server (its mapping and row
        stay until archived).
    :param fault: read its latest fault too (what a view of it shows).
    :raises errors.NotFound: no such (live) server.
    :raises down_cells.CellDown: its cell database does not answer.
    """
    mapping = None
    cell_uuid = KNOWN_CELLS.get(uuid)
    if cell_uuid is None:
        cell_uuid, mapping = _mapped_cell(ctxt, uuid)
        if cell_uuid is None:
            return mapping, None
    cell = _cell(ctxt, cell_uuid)
    if cell is None:
        KNOWN_CELLS.forget(uuid)
        raise _not_found(uuid)
    if down_cells.known_down(cell):
        raise _cell_down(ctxt, uuid, cell, mapping)
    try:
        instance = instance_records.get_instance(
            ctxt, cell_hosts.database(cell), uuid,
            read_deleted=read_deleted, fault=fault)
    except exception.InstanceNotFound:
        KNOWN_CELLS.forget(uuid)
        raise _not_found(uuid)
    except Exception as exc:
        if not down_cells.is_down(exc):
            raise
        down_cells.mark_down(cell, exc)
        raise _cell_down(ctxt, uuid, cell, mapping)
    KNOWN_CELLS.remember(uuid, cell.uuid)
    instance.cell_uuid = cell.uuid
    return instance, cell


def _sort_key(pair):
    instance = pair[0]
    # NOTE: the servers of one multi-create share created_at; Nova's
    # newest-first order then shows the last launched first.
    return (instance.created_at or '', instance.launch_index or 0,
            instance.uuid)


def _changed_within(instance, filters):
    """``changes-since``/``changes-before`` (naive UTC datetimes): the
    server's last update (its creation if never updated) in the range.
    """
    since = filters.get('changes-since')
    before = filters.get('changes-before')
    if since is None and before is None:
        return True
    changed = instance.updated_at or instance.created_at
    if changed is None:
        return False
    changed = util.record_time(changed)
    return ((since is None or changed >= since) and
            (before is None or changed <= before))


_CHANGE_FILTERS = ('changes-since', 'changes-before')


def _matching(pairs, filters, tag_filters):
    """The (instance, cell) pairs that pass every filter."""
    field_filters = {k: v for k, v in filters.items()
                     if k not in _CHANGE_FILTERS}
    return [pair for pair in pairs
            if _changed_within(pair[0], filters) and
            server_filters.matches(pair[0], field_filters) and
            _matches_tags(pair[0], tag_filters)]


TAG_FILTERS = ('tags', 'tags-any', 'not-tags', 'not-tags-any')


def _matches_tags(instance, tag_filters):
    """Nova's tag filters: ``tags`` all of, ``tags-any`` one of,
    ``not-tags`` not all of, ``not-tags-any`` none of the listed tags.
    """
    have = set(instance.tags or ())
    wanted = tag_filters.get('tags')
    if wanted and not set(wanted) <= have:
        return False
    wanted = tag_filters.get('tags-any')
    if wanted and not set(wanted) & have:
        return False
    wanted = tag_filters.get('not-tags')
    if wanted and set(wanted) <= have:
        return False
    wanted = tag_filters.get('not-tags-any')
    if wanted and set(wanted) & have:
        return False
    return True


def _read_cell(ctxt, cell, project_id, host, deleted, with_tags,
               filters):
    database = cell_hosts.database(cell)
    instances = instance_records.list_instances(
        ctxt, database, project_id=project_id, host=host, deleted=deleted,
        changed_since=filters.get('changes-since'),
        changed_before=filters.get('changes-before'))
    if with_tags and instances:
        tags = instance_tags.tags_by_instance(
            ctxt, database, [i.uuid for i in instances])
        for instance in instances:
            instance.tags = tags.get(instance.uuid, [])
    return instances


def _cell_instances(ctxt, cell, project_id, host, deleted, with_tags,
                    down, filters):
    if down_cells.known_down(cell):
        down.append(cell)
        return []
    try:
        return _read_cell(ctxt, cell, project_id, host, deleted, with_tags,
                          filters)
    except Exception as exc:
        if not down_cells.is_down(exc):
            raise
        down_cells.mark_down(cell, exc)
        down.append(cell)
        return []


def _remembered(cell, instances):
    """{uuid: (instance, cell)} of a cell's listed ``instances``, whose
    ``cell_uuid`` is set and whose cell is remembered when they are live.

    NOTE: a client lists, then acts on what it saw: the action then reads
    the server's cell only (see :func:`find`).
    """
    for instance in instances:
        instance.cell_uuid = cell.uuid
    KNOWN_CELLS.remember_many((instance.uuid, cell.uuid)
                              for instance in instances
                              if not instance.deleted)
    return {instance.uuid: (instance, cell) for instance in instances}


def list_servers(ctxt, project_id=None, host=None, filters=None,
                 limit=None, marker=None, deleted=False, tag_filters=None,
                 with_tags=False, down=None):
    """[(Instance, CellMapping or None)], newest first.

    :param project_id: one project's servers, or None for all.
    :param host: only servers on this host (never build requests).
    :param filters: those of :func:`server_filters.from_request`, and
        changes-since and changes-before (naive UTC datetimes).
    :param deleted: as :func:`instance_records.list_instances` (None:
        live and deleted servers).
    :param marker: the uuid after which the page starts.
    :param tag_filters: :data:`TAG_FILTERS` name -> list of tags.
    :param with_tags: read the servers' tags (``instance.tags``).
    :param down: a list to which the cells whose database does not answer
        are added (their servers are left out).
    :raises errors.BadRequest: an unknown marker.
    """
    filters = filters or {}
    tag_filters = tag_filters or {}
    with_tags = with_tags or bool(tag_filters)
    found = {}
    down = [] if down is None else down
    for cell in cell_hosts.all_cells(ctxt):
        found.update(_remembered(cell, _cell_instances(
            ctxt, cell, project_id, host, deleted, with_tags, down,
            filters)))
    if host is None and not deleted:
        for instance in boot_records.list_build_requests(ctxt, project_id):
            found.setdefault(instance.uuid, (instance, None))
    servers = sorted(_matching(found.values(), filters, tag_filters),
                     key=_sort_key, reverse=True)
    if marker is not None:
        uuids = [pair[0].uuid for pair in servers]
        if marker not in uuids:
            raise errors.BadRequest('marker [%s] not found' % marker)
        servers = servers[uuids.index(marker) + 1:]
    if limit is not None:
        servers = servers[:limit]
    return servers
