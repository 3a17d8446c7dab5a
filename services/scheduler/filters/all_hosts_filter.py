# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AllHostsFilter: a filter that lets every host through."""

from services.scheduler import filters


class AllHostsFilter(filters.BaseHostFilter):
    """Pass every host (no filtering at all).

    Useful to run only the placement query and the weighers, or as a
    harmless placeholder in ``enabled_filters``.
    """

    # NOTE: the answer never changes, so later instances of a
    # multi-create reuse it.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        """Always True."""
        return True
