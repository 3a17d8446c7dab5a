# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""DiskWeigher: prefer hosts with more free local disk."""

from common.conf import CONF
from services.scheduler import weighers


class DiskWeigher(weighers.BaseHostWeigher):
    """Weigh hosts by their free local disk in MiB.

    A positive ``disk_weight_multiplier`` (the default, 1.0) spreads
    instances over the hosts with the most free disk; a negative one stacks
    them.
    """

    # NOTE: normalised from 0, like the RAM weigher, so that the score stays
    # proportional to the free space and near-equal hosts score near-equal.
    minval = 0

    def weight_multiplier(self, host_state):
        """``disk_weight_multiplier``, or the host's aggregate override."""
        return weighers.aggregate_multiplier(
            host_state, 'disk_weight_multiplier',
            CONF.filter_scheduler.disk_weight_multiplier)

    def weigh_objects(self, weighed_hosts, spec_obj):
        """Free disk of every host (no call per host)."""
        return [w.obj.free_disk_mb for w in weighed_hosts]

    def _weigh_object(self, host_state, spec_obj):
        """Free local disk in MiB."""
        return host_state.free_disk_mb
