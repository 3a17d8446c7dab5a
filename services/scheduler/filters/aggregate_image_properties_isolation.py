# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateImagePropertiesIsolation: image properties vs aggregates."""

import common.conf
from services.scheduler import filters

CONF = common.conf.CONF


class AggregateImagePropertiesIsolation(filters.BaseHostFilter):
    """Pass hosts whose aggregate metadata agrees with the image properties.

    For each metadata key of the host's aggregates that the image also
    sets (``os_distro=windows``), the image's value must be one of the
    aggregate values (merged over the aggregates, comma-split). Keys the
    image does not set are ignored, so a host in no aggregate takes any
    image. With ``[filter_scheduler]
    aggregate_image_properties_isolation_namespace`` set, only keys that
    start with the namespace and the separator (``isolation.os``) are
    compared.

    The filter only ever narrows by what the image says: an image without
    ``os_distro`` may still land in the Windows aggregate. Use the
    isolate-aggregates placement pre-filter to keep other images out.
    """

    # NOTE: the image and the host's aggregates do not change within a
    # request.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = True

    def host_passes(self, host_state, spec_obj):
        """True when no image property contradicts the host's aggregates."""
        props = spec_obj.image.properties if spec_obj.image else {}
        if not props:
            return True
        opts = CONF.filter_scheduler
        namespace = opts.aggregate_image_properties_isolation_namespace
        separator = opts.aggregate_image_properties_isolation_separator
        prefix = namespace + separator if namespace else None
        metadata = host_state.aggregate_metadata(split=True)
        for key, options in sorted(metadata.items()):
            if prefix is not None and not key.startswith(prefix):
                continue
            prop = props.get(key)
            # NOTE: an unset (or empty) property asks nothing of the host.
            if prop is None or prop == '':
                continue
            if str(prop) not in options:
                return self.reject(
                    host_state, "image property %s=%s is not in the "
                    "aggregate values %s", key, prop, sorted(options))
        return True
