# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The version documents at ``/``, ``/v2`` and ``/v2.1``.

keystoneauth's version discovery reads these (no token needed) to learn
the endpoint of v2.1 and its microversion range; openstacksdk then
negotiates each request's microversion from ``version``. As Nova, ``/``
also lists v2.0, SUPPORTED and without microversions; Berth serves only
its version document at ``/v2`` (doc/api.md), the API itself is v2.1.
"""

from services.api import microversion
from services.api import util

UPDATED = '2013-07-23T11:33:21Z'
UPDATED_V20 = '2011-01-21T11:33:21Z'


def _v20(req):
    base = req.application_url.rstrip('/')
    return {
        'id': 'v2.0',
        'status': 'SUPPORTED',
        'version': '',
        'min_version': '',
        'updated': UPDATED_V20,
        'links': [{'rel': 'self', 'href': base + '/v2/'}],
    }


def _v21(req):
    base = req.application_url.rstrip('/')
    return {
        'id': 'v2.1',
        'status': 'CURRENT',
        'version': str(microversion.MAX_VERSION),
        'min_version': str(microversion.MIN_VERSION),
        'updated': UPDATED,
        'links': [{'rel': 'self', 'href': base + '/v2.1/'}],
    }


def versions(req):
    """GET /: the versions this endpoint lists (v2.0 and v2.1)."""
    return util.json_response({'versions': [_v20(req), _v21(req)]})


def _with_media(doc, version):
    doc['links'].append({'rel': 'describedby', 'type': 'text/html',
                         'href': 'https://docs.openstack.org/'})
    doc['media-types'] = [{
        'base': 'application/json',
        'type': 'application/vnd.openstack.compute+json;version=%s'
                % version}]
    return doc


def version_v20(req):
    """GET /v2: the v2.0 version document."""
    return util.json_response({'version': _with_media(_v20(req), '2')})


def version_v21(req):
    """GET /v2.1: the v2.1 version document."""
    return util.json_response({'version': _with_media(_v21(req), '2.1')})
