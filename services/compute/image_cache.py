# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Image pre-caching on one host (compute API 2.81,
``POST /os-aggregates/{id}/images``).

The conductor asks each host of the aggregate in turn; the host has its
driver fetch every image into its cache and answers how each went, with
Nova's words: ``cached`` (fetched now), ``existing`` (it was there),
``unsupported`` (the driver keeps no image cache) or ``error``. One image
failing does not stop the others.
"""

import logging

LOG = logging.getLogger(__name__)

CACHED, EXISTING, UNSUPPORTED, ERROR = (
    'cached', 'existing', 'unsupported', 'error')


def cache_images(agent, host, image_ids):
    """Have the driver cache ``image_ids`` on ``host``.

    :returns: {image id: CACHED | EXISTING | UNSUPPORTED | ERROR}.
    """
    results = {}
    for image_id in image_ids:
        try:
            fetched = agent.driver.cache_image(host, image_id)
        except NotImplementedError:
            results[image_id] = UNSUPPORTED
            continue
        except Exception as exc:
            LOG.error('Could not cache image %s on %s: %s', image_id, host,
                      exc)
            results[image_id] = ERROR
            continue
        results[image_id] = CACHED if fetched else EXISTING
    if UNSUPPORTED in results.values():
        LOG.warning('The %s driver of %s keeps no image cache: image '
                    'pre-caching does nothing there',
                    type(agent.driver).__name__, host)
    LOG.info('Image pre-cache on %s: %s', host, ', '.join(
        '%s %s' % item for item in sorted(results.items())))
    return results
