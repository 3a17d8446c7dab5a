# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""RetryFilter: never retry a build on a node that already failed it."""

from services.scheduler import filters


class RetryFilter(filters.BaseHostFilter):
    """Pass nodes not yet tried for this request.

    ``spec_obj.retry.hosts`` lists the [host, node] pairs a rescheduled
    build already failed on; those nodes fail. A first attempt (no retry
    record) passes everywhere. Alternates picked at the first scheduling
    make most reschedules skip the scheduler, but a request that comes
    back (resize, evacuate retries) must still avoid the bad nodes.
    """

    # NOTE: the tried nodes are fixed for the request; rebuilds stay on
    # their host and are not retried elsewhere.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        """True unless [host, node] is among the tried pairs."""
        retry = spec_obj.retry
        if retry is None or not retry.hosts:
            return True
        # NOTE: pairs arrive as lists from JSON but may be tuples in
        # process; compare them as tuples.
        tried = {tuple(pair) for pair in retry.hosts}
        if (host_state.host, host_state.nodename) in tried:
            return self.reject(
                host_state, 'node already tried for this request '
                '(attempt %d)', retry.num_attempts)
        return True
