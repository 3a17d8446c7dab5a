# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""What moves in progress take from a node, beside its own instances.

A server that moves is counted on both of its nodes until the move ends
(as Nova's resource tracker counts its migrations): the destination
holds the new flavor from the claim on, the source keeps the old one
until the move is confirmed or reverted. The instance's row counts on
the node it names, with the flavor it has; each side of a migration adds
what the row does not already count there:

* destination: the new flavor and the NUMA topology claimed there
  (``migration_context.new_numa_topology``), unless the row is on this
  node with the new flavor already (a resize finished);
* source: the old flavor and the topology it had there
  (``old_numa_topology``), unless the row is still on this node with
  the old flavor.

A same-host resize thus counts both flavors on the one node, as Nova
does. These usages are keyed by the migration's uuid, the consumer that
holds the source's allocation in placement.
"""

from services.compute import usage as usage_mod


def _flavor_id(flavor):
    return (flavor or {}).get('flavorid')


def _counted_here(row, host, nodename, flavor):
    """True when ``row`` counts on this node with ``flavor`` already."""
    return (row is not None and row.get('host') == host and
            row.get('node') == nodename and
            _flavor_id(row.get('flavor')) == _flavor_id(flavor))


def _side(migration, host, nodename):
    """'dest', 'source' or None: this node's side of ``migration``.

    NOTE: the destination first: for a same-host resize both sides are
    this node and what it lacks is decided per flavor below.
    """
    sides = []
    if (migration.get('dest_compute') == host and
            migration.get('dest_node') == nodename):
        sides.append('dest')
    if (migration.get('source_compute') == host and
            migration.get('source_node') == nodename):
        sides.append('source')
    return sides


def usages_for_node(host, nodename, migrations, rows):
    """{migration uuid: InstanceUsage} of the moves counted on the node.

    :param migrations: Migration primitives in progress to or from
        ``host``.
    :param rows: instance uuid -> tracked row (the host's own and those
        of moving instances elsewhere).
    :returns: (usages, consumers): the usages to add, and every consumer
        uuid (migration and instance) placement may hold on this node
        for them.
    """
    usages = {}
    consumers = set()
    for migration in migrations:
        row = rows.get(migration['instance_uuid'])
        if row is None or not usage_mod.counted(row):
            continue
        context = row.get('migration_context') or {}
        for side in _side(migration, host, nodename):
            consumers.update((migration['uuid'], row['uuid']))
            if side == 'dest':
                flavor = migration.get('new_flavor')
                numa = context.get('new_numa_topology')
            else:
                flavor = migration.get('old_flavor')
                numa = context.get('old_numa_topology')
            if _counted_here(row, host, nodename, flavor):
                continue
            values = dict(row, uuid=migration['uuid'], flavor=flavor,
                          numa_topology=numa)
            usages[migration['uuid']] = usage_mod.from_instance(values)
    return usages, consumers
