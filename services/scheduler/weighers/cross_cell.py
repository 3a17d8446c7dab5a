# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""CrossCellWeigher: during a move, prefer hosts in the instance's own cell."""

from common.conf import CONF
from services.scheduler import weighers

#: The scheduler hint naming the cell an instance is moved out of.
SOURCE_CELL_HINT = 'source_cell'


def source_cell(spec_obj):
    """The cell the instance is moving from, or None for a plain boot.

    Taken from the ``source_cell`` scheduler hint, else from the request's
    ``requested_destination.cell``.
    """
    cell = spec_obj.get_scheduler_hint(SOURCE_CELL_HINT)
    if isinstance(cell, list):
        # NOTE: a move has one source; several values are a malformed
        # hint, which must not steer the move anywhere.
        cell = None
    if not cell and spec_obj.requested_destination is not None:
        cell = spec_obj.requested_destination.cell
    return cell or None


class CrossCellWeigher(weighers.BaseHostWeigher):
    """Weigh hosts in the source cell of a move above the other cells.

    A move (resize, cold migration) that may cross cells still prefers to
    stay in the instance's cell, because a cross-cell move copies the
    instance's records between cell databases and is slower and riskier.
    Hosts in the source cell weigh 1, others 0; for a plain boot every
    host weighs 0. The large default ``cross_cell_move_weight_multiplier``
    (1000000.0) makes the source cell win over any other weigher whenever
    it has a valid host.
    """

    def weight_multiplier(self, host_state):
        """``cross_cell_move_weight_multiplier`` or the aggregate override."""
        return weighers.aggregate_multiplier(
            host_state, 'cross_cell_move_weight_multiplier',
            CONF.filter_scheduler.cross_cell_move_weight_multiplier)

    def weigh_objects(self, weighed_hosts, spec_obj):
        """Raw weights; the source cell is read once per request."""
        cell = source_cell(spec_obj)
        if cell is None:
            return [0] * len(weighed_hosts)
        return [1 if w.obj.cell_uuid == cell else 0 for w in weighed_hosts]

    def _weigh_object(self, host_state, spec_obj):
        """1 for a host in the move's source cell, else 0."""
        cell = source_cell(spec_obj)
        if cell is None:
            return 0
        return 1 if host_state.cell_uuid == cell else 0
