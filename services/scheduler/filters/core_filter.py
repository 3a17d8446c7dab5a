# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""CoreFilter: the classic vCPU capacity check with overcommit."""

import logging

from services.scheduler import filters

LOG = logging.getLogger(__name__)


class CoreFilter(filters.BaseHostFilter):
    """Pass hosts with enough vCPUs left under the CPU allocation ratio.

    Placement already refuses hosts without VCPU capacity, so this filter is
    off by default; it stays for deployments that want the scheduler-side
    check and the ``limits['vcpu']`` it hands to the compute claim.
    """

    RUN_ON_REBUILD = False

    def _get_cpu_allocation_ratio(self, host_state, spec_obj):
        """The overcommit ratio in force for ``host_state``."""
        return host_state.cpu_allocation_ratio

    def host_passes(self, host_state, spec_obj):
        """True when one more instance's vCPUs fit on the host."""
        if not host_state.vcpus_total:
            # NOTE: a host that reports no CPUs has a broken collector,
            # not zero capacity; refusing it would hide the real problem.
            LOG.warning('VCPUs not set; assuming CPU collection broken')
            return True

        instance_vcpus = spec_obj.vcpus
        ratio = self._get_cpu_allocation_ratio(host_state, spec_obj)
        vcpus_total = host_state.vcpus_total * ratio

        if vcpus_total > 0:
            # NOTE: the compute claim checks against the same limit, so
            # the scheduler and the compute agree on the overcommit.
            self.set_limit(host_state, 'vcpu', vcpus_total)

            # NOTE: do not allow an instance to overcommit against itself,
            # only against other instances: one guest larger than the
            # physical CPU count would fight itself for CPU time
            # (doc/behaviours.md B9, A10: 10 pCPUs at ratio 2 take 2x10
            # vCPUs, never 1x11).
            if instance_vcpus > host_state.vcpus_total:
                return self.reject(
                    host_state,
                    'does not have %d total cpus before overcommit, '
                    'it only has %d',
                    instance_vcpus, host_state.vcpus_total)

        free_vcpus = vcpus_total - host_state.vcpus_used
        if free_vcpus < instance_vcpus:
            return self.reject(
                host_state,
                'does not have %d usable vcpus, it only has %d usable vcpus',
                instance_vcpus, free_vcpus)
        return True
