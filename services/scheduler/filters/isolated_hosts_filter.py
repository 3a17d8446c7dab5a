# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""IsolatedHostsFilter: keep isolated images and isolated hosts together."""

import common.conf
from services.scheduler import filters

CONF = common.conf.CONF


class IsolatedHostsFilter(filters.BaseHostFilter):
    """Run the isolated images only on the isolated hosts.

    ``[filter_scheduler] isolated_images`` (image uuids) may run only on
    ``isolated_hosts``. With ``restrict_isolated_hosts_to_isolated_images``
    (the default) the isolated hosts also run nothing else::

        restrict=True     isolated image   other image
        isolated host     pass             fail
        other host        fail             pass

        restrict=False    isolated image   other image
        isolated host     pass             pass
        other host        fail             pass

    A volume-backed request has no image here, so it counts as "other
    image". With no isolated images configured, only the restriction
    (isolated hosts refuse everything) applies.
    """

    # NOTE: configuration and image do not change within a request.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = True

    def host_passes(self, host_state, spec_obj):
        """True when image and host are on the same side of the isolation."""
        opts = CONF.filter_scheduler
        restrict = opts.restrict_isolated_hosts_to_isolated_images
        host_isolated = host_state.host in opts.isolated_hosts
        image_id = None
        # NOTE: volume-backed requests boot no image of their own (Nova
        # documents that they never go to isolated hosts when restricted).
        if spec_obj.image is not None and not spec_obj.is_bfv:
            image_id = spec_obj.image.id
        image_isolated = (image_id is not None
                          and image_id in opts.isolated_images)
        if image_isolated and not host_isolated:
            return self.reject(host_state, 'image %s is isolated to hosts '
                               '%s', image_id, ', '.join(opts.isolated_hosts))
        if host_isolated and not image_isolated and restrict:
            return self.reject(host_state, 'is an isolated host and image %s '
                               'is not an isolated image', image_id)
        return True
