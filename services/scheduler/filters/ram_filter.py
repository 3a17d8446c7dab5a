# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""RamFilter: the classic memory capacity check with overcommit."""

from services.scheduler import filters


class RamFilter(filters.BaseHostFilter):
    """Pass hosts with enough RAM left under the RAM allocation ratio.

    Placement already refuses hosts without MEMORY_MB capacity, so this
    filter is off by default; it stays for deployments that want the
    scheduler-side check and ``limits['memory_mb']`` for the compute claim.
    """

    RUN_ON_REBUILD = False

    def _get_ram_allocation_ratio(self, host_state, spec_obj):
        """The overcommit ratio in force for ``host_state``."""
        return host_state.ram_allocation_ratio

    def host_passes(self, host_state, spec_obj):
        """True when one more instance's RAM fits on the host."""
        requested_ram = spec_obj.memory_mb
        total_usable_ram_mb = host_state.total_usable_ram_mb
        ratio = self._get_ram_allocation_ratio(host_state, spec_obj)

        memory_mb_limit = total_usable_ram_mb * ratio
        # NOTE: "used" is derived from the free figure rather than summed
        # from instances, so host reservations and the virtual consumption
        # of earlier selections are both counted.
        used_ram_mb = total_usable_ram_mb - host_state.free_ram_mb
        usable_ram = memory_mb_limit - used_ram_mb
        if usable_ram < requested_ram:
            return self.reject(
                host_state,
                'does not have %d MB usable ram, it only has %d MB usable '
                'ram.', requested_ram, usable_ram)

        # NOTE: only a passing host gets a limit; the compute claim checks
        # the instance against it.
        self.set_limit(host_state, 'memory_mb', memory_mb_limit)
        return True
