# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""DiskFilter: the classic local disk capacity check with overcommit."""

from services.scheduler import filters


def requested_disk_mb(spec_obj):
    """Local disk one instance of ``spec_obj`` needs, in MiB.

    Root (none when booted from volume), ephemeral and swap; swap is kept
    in MiB here because the spec's ``disk_gb`` rounds it down.
    """
    flavor = spec_obj.flavor
    root_gb = 0 if spec_obj.is_bfv else flavor.root_gb
    return 1024 * (root_gb + flavor.ephemeral_gb) + flavor.swap


class DiskFilter(filters.BaseHostFilter):
    """Pass hosts with enough local disk left under the disk ratio.

    Placement already refuses hosts without DISK_GB capacity, so this
    filter is off by default; it stays for deployments that want the
    scheduler-side check and ``limits['disk_gb']`` for the compute claim.
    """

    RUN_ON_REBUILD = False

    def _get_disk_allocation_ratio(self, host_state, spec_obj):
        """The overcommit ratio in force for ``host_state``."""
        return host_state.disk_allocation_ratio

    def host_passes(self, host_state, spec_obj):
        """True when one more instance's local disk fits on the host."""
        requested_disk = requested_disk_mb(spec_obj)
        total_usable_disk_mb = host_state.total_usable_disk_gb * 1024

        # NOTE: do not allow an instance to overcommit against itself, only
        # against other instances: if this one instance does not fit into
        # the physical disk, thin provisioning cannot save it.
        if total_usable_disk_mb < requested_disk:
            return self.reject(
                host_state,
                'does not have %d MB usable disk space before overcommit, '
                'it only has %d MB.', requested_disk, total_usable_disk_mb)

        ratio = self._get_disk_allocation_ratio(host_state, spec_obj)
        disk_mb_limit = total_usable_disk_mb * ratio
        used_disk_mb = total_usable_disk_mb - host_state.free_disk_mb
        usable_disk_mb = disk_mb_limit - used_disk_mb
        if usable_disk_mb < requested_disk:
            return self.reject(
                host_state,
                'does not have %d MB usable disk, it only has %d MB usable '
                'disk.', requested_disk, usable_disk_mb)

        self.set_limit(host_state, 'disk_gb', disk_mb_limit / 1024)
        return True
