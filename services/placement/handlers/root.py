# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The root version document."""

from services.placement import microversion
from services.placement import util


def home(req):
    """GET /: the supported version range.

    No authentication is needed, so that clients can discover versions.
    """
    version_doc = {
        'id': 'v1.0',
        'max_version': str(microversion.MAX_VERSION),
        'min_version': str(microversion.MIN_VERSION),
        # NOTE: a relative, empty self link: placement is often served
        # under a path prefix that it cannot know.
        'status': 'CURRENT',
        'links': [{'rel': 'self', 'href': ''}],
    }
    return util.json_response(req, {'versions': [version_doc]})
