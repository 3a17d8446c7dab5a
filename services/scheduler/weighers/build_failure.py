# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""BuildFailureWeigher: avoid hosts whose recent builds failed."""

from common.conf import CONF
from services.scheduler import weighers


class BuildFailureWeigher(weighers.BaseHostWeigher):
    """Weigh hosts down by their count of recent failed builds.

    The raw weight is the negated ``failed_builds`` counter, so with the
    positive default ``build_failure_weight_multiplier`` (1000000.0) more
    failures make a host worse. The large default lets a host that keeps
    failing (a broken hypervisor, a full disk) lose against any healthy
    host whatever the other weighers say; the compute service resets the
    counter on its next successful build.
    """

    def weight_multiplier(self, host_state):
        """``build_failure_weight_multiplier`` or the aggregate override."""
        return weighers.aggregate_multiplier(
            host_state, 'build_failure_weight_multiplier',
            CONF.filter_scheduler.build_failure_weight_multiplier)

    def weigh_objects(self, weighed_hosts, spec_obj):
        """Minus the failed builds of every host (no call per host)."""
        return [-w.obj.failed_builds for w in weighed_hosts]

    def _weigh_object(self, host_state, spec_obj):
        """Minus the number of recent failed builds on the host."""
        # NOTE: negated here rather than through a negative multiplier, so
        # that operators tune a positive "how much to care" value.
        return -host_state.failed_builds
