# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handler for POST /os-aggregates/{aggregate_id}/images (2.81, admin).

``{"cache": [{"id": <image uuid>}, ...]}`` asks every compute host of
the aggregate to fetch the images into its cache ahead of the boots that
will use them. As Nova's API: the aggregate id must be an integer (400),
an image named twice is a 400 ``Duplicate images in request``, an
unknown aggregate a 404 and an image the caller cannot see a 400; then
the conductor is told (a cast) and the answer is 202 with no body. The
hosts' work is the conductor's (:mod:`services.conductor.image_cache`),
reported in ``aggregate.cache_images.*`` notifications.
"""

import logging
import re

from services.api import boot
from services.api import errors
from services.api.handlers import aggregates
from services.api import images as image_api
from services.api import policies
from services.api.schemas import aggregates as schema
from services.api import util

LOG = logging.getLogger(__name__)

POLICY = 'compute:aggregates:images'
VERSION = (2, 81)
_INTEGER = re.compile(r'^\s*[-+]?[0-9]+\s*$', re.ASCII)


def _aggregate_id(text):
    """The path's aggregate id as an integer (Nova takes no uuid here)."""
    if not _INTEGER.match(text):
        raise errors.BadRequest('Invalid input received: id must be an '
                                'integer')
    return int(text)


def _check_images(req, image_ids):
    """400 for an image the caller cannot see (Nova's message)."""
    ctxt = util.context(req)
    conf = util.conf(req)
    for image_id in image_ids:
        try:
            image_api.get_image(ctxt, conf, image_id)
        except image_api.ImageNotFound as exc:
            raise errors.BadRequest(str(exc))
        except image_api.ImageServiceUnavailable as exc:
            raise errors.ServiceUnavailable(str(exc))


def cache_images(req):
    """POST /os-aggregates/{aggregate_id}/images: 202.

    :raises errors.NotFound: below 2.81, or no such aggregate.
    :raises errors.BadRequest: a bad body or id, a duplicate or unknown
        image.
    :raises errors.ServiceUnavailable: the conductor could not be told.
    """
    util.require_version(req, VERSION)
    policies.authorize(req, POLICY)
    body = util.extract_json(req, schema.CACHE_IMAGES)
    aggregate_id = _aggregate_id(req.urlvars['aggregate_id'])
    image_ids = [item['id'] for item in body['cache']]
    if len(set(image_ids)) != len(image_ids):
        raise errors.BadRequest('Duplicate images in request')
    agg = aggregates.get_aggregate(req, aggregate_id)
    _check_images(req, image_ids)
    ctxt = util.context(req)
    try:
        boot.conductor_api().cache_images(ctxt, {
            'id': agg['id'], 'uuid': agg['uuid'], 'name': agg['name'],
            'hosts': list(agg['hosts']),
            'metadata': dict(agg['metadata'])}, image_ids)
    except Exception as exc:
        LOG.exception('Could not ask the conductor to pre-cache images on '
                      'aggregate %s', agg['id'])
        raise errors.ServiceUnavailable('The image pre-cache request could '
                                        'not be sent: %s' % exc)
    return util.no_content(202)
