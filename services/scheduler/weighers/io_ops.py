# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""IoOpsWeigher: prefer hosts with fewer I/O-heavy operations under way."""

from common.conf import CONF
from services.scheduler import weighers


class IoOpsWeigher(weighers.BaseHostWeigher):
    """Weigh hosts by their concurrent I/O operations (``num_io_ops``).

    Builds, resizes and snapshots count as I/O operations. The default
    ``io_ops_weight_multiplier`` is -1.0, so idle hosts win; a positive
    value packs the busy hosts instead.
    """

    def weight_multiplier(self, host_state):
        """``io_ops_weight_multiplier``, or the host's aggregate override."""
        return weighers.aggregate_multiplier(
            host_state, 'io_ops_weight_multiplier',
            CONF.filter_scheduler.io_ops_weight_multiplier)

    def weigh_objects(self, weighed_hosts, spec_obj):
        """I/O operations of every host (no call per host)."""
        return [w.obj.num_io_ops for w in weighed_hosts]

    def _weigh_object(self, host_state, spec_obj):
        """The number of I/O operations in progress on the host."""
        return host_state.num_io_ops
