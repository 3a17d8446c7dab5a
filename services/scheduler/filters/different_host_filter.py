# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""DifferentHostFilter: the ``different_host`` scheduler hint."""

from services.scheduler import filters
from services.scheduler.filters import same_host_filter

HINT = 'different_host'


class DifferentHostFilter(filters.BaseHostFilter):
    """Pass hosts running none of the instances named by ``different_host``.

    ``--hint different_host=<uuid>`` (repeatable) keeps the new instance
    off every host where one of those instances runs, as recorded in
    ``host_state.instances``. Without the hint every host passes.
    """

    # NOTE: the instances on a host are read once per request.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        """True without the hint or when no hinted instance is here."""
        uuids = same_host_filter.hinted_uuids(spec_obj, HINT)
        here = [uuid for uuid in uuids if uuid in host_state.instances]
        if not here:
            return True
        return self.reject(host_state, 'runs the different_host '
                           'instance(s) %s', ', '.join(here))
