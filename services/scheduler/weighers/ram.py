# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""RAMWeigher: prefer hosts with more free RAM (spreading by default)."""

from common.conf import CONF
from services.scheduler import weighers


class RAMWeigher(weighers.BaseHostWeigher):
    """Weigh hosts by their free RAM in MiB.

    A positive ``ram_weight_multiplier`` (the default, 1.0) spreads
    instances over the hosts with the most free memory; a negative one
    stacks them on the fullest hosts first.
    """

    # NOTE: normalising from 0 rather than from the smallest candidate keeps
    # a few MiB of difference between two nearly equal hosts from being
    # blown up into the whole 0..1 range; the scores stay proportional to
    # the free memory itself, as upstream's RAM weigher does.
    minval = 0

    def weight_multiplier(self, host_state):
        """``ram_weight_multiplier``, or the host's aggregate override."""
        return weighers.aggregate_multiplier(
            host_state, 'ram_weight_multiplier',
            CONF.filter_scheduler.ram_weight_multiplier)

    def weigh_objects(self, weighed_hosts, spec_obj):
        """Free RAM of every host (no call per host)."""
        return [w.obj.free_ram_mb for w in weighed_hosts]

    def _weigh_object(self, host_state, spec_obj):
        """Free RAM in MiB (negative when the host is overcommitted)."""
        return host_state.free_ram_mb
