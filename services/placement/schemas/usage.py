# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Schemas for the query string of GET /usages."""

import copy

from services.placement.schemas import fields

_EXTERNAL_ID = fields.text(minLength=1, maxLength=255)

QUERY_V1_9 = {
    'type': 'object',
    'properties': {
        'project_id': _EXTERNAL_ID,
        'user_id': _EXTERNAL_ID,
    },
    'required': ['project_id'],
    'additionalProperties': False,
}

# 1.38: usages may be limited to one consumer type; ``all`` and
# ``unknown`` (consumers without a type) are the two special values.
QUERY_V1_38 = copy.deepcopy(QUERY_V1_9)
QUERY_V1_38['properties']['consumer_type'] = {
    'type': 'string', 'minLength': 1, 'maxLength': 255,
    'pattern': '^([A-Z0-9_]+|all|unknown)$'}


def for_query(version):
    """The GET /usages query schema for ``version``."""
    return QUERY_V1_38 if version >= (1, 38) else QUERY_V1_9
