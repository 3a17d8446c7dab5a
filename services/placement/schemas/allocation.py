# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas of the allocation bodies, one per microversion range.

``PUT /allocations/{consumer_uuid}`` took a list of provider entries until
1.12 and a dict keyed by provider uuid since; ``POST /allocations`` (1.13)
takes a dict of such bodies keyed by consumer uuid. Later microversions add
required fields: project and user (1.8), the consumer generation (1.28) and
the consumer type (1.38); 1.34 allows ``mappings``.
"""

import copy

from services.placement.schemas import fields

# NOTE: the columns holding amounts are 32-bit signed integers everywhere.
MAX_INT = fields.MAX_INT

RC_PATTERN = '^[A-Z0-9_]+$'
UUID_PATTERN = '^[0-9a-fA-F-]{36}$'
CONSUMER_TYPE_PATTERN = '^[A-Z0-9_]+$'

RESOURCES = {
    'type': 'object',
    'minProperties': 1,
    'patternProperties': {
        RC_PATTERN: {'type': 'integer', 'minimum': 1, 'maximum': MAX_INT},
    },
    'additionalProperties': False,
}

_EXTERNAL_ID = fields.text(minLength=1, maxLength=255)

CONSUMER_GENERATION = fields.CONSUMER_GENERATION

CONSUMER_TYPE = {'type': 'string', 'minLength': 1, 'maxLength': 255,
                 'pattern': CONSUMER_TYPE_PATTERN}

# Request group suffix -> the providers that satisfied it (1.34).
# NOTE: an empty object names no group at all and is refused, as upstream
# placement refuses it (its release notes call accepting ``{}`` a typo
# that was fixed); an allocation without mappings simply omits the field.
MAPPINGS = {
    'type': 'object',
    'minProperties': 1,
    'additionalProperties': {
        'type': 'array',
        'minItems': 1,
        'items': {'type': 'string', 'pattern': UUID_PATTERN},
    },
}

# PUT /allocations/{consumer_uuid}, 1.0 - 1.7: a list of provider entries.
PUT_V1_0 = {
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'array',
            'minItems': 1,
            'items': {
                'type': 'object',
                'properties': {
                    'resource_provider': {
                        'type': 'object',
                        'properties': {
                            'uuid': {'type': 'string', 'format': 'uuid'},
                        },
                        'additionalProperties': False,
                        'required': ['uuid'],
                    },
                    'resources': RESOURCES,
                },
                'required': ['resource_provider', 'resources'],
                'additionalProperties': False,
            },
        },
    },
    'required': ['allocations'],
    'additionalProperties': False,
}

# 1.8 - 1.11: the same, with the owner of the consumer.
PUT_V1_8 = copy.deepcopy(PUT_V1_0)
PUT_V1_8['properties']['project_id'] = _EXTERNAL_ID
PUT_V1_8['properties']['user_id'] = _EXTERNAL_ID
PUT_V1_8['required'].extend(['project_id', 'user_id'])

# The dict form keyed by provider uuid. ``generation`` is accepted so that
# the body of a GET can be sent back as it is; it is not checked.
ALLOCATIONS_DICT = {
    'type': 'object',
    'minProperties': 1,
    'patternProperties': {
        UUID_PATTERN: {
            'type': 'object',
            'properties': {
                # NOTE: never stored nor compared, so not bounded.
                'generation': {'type': 'integer'},
                'resources': RESOURCES,
            },
            'required': ['resources'],
            'additionalProperties': False,
        },
    },
    'additionalProperties': False,
}

# 1.12 - 1.27: the dict form.
PUT_V1_12 = {
    'type': 'object',
    'properties': {
        'allocations': ALLOCATIONS_DICT,
        'project_id': _EXTERNAL_ID,
        'user_id': _EXTERNAL_ID,
    },
    'required': ['allocations', 'project_id', 'user_id'],
    'additionalProperties': False,
}

# 1.28 - 1.33: consumer generations; an empty dict removes everything.
PUT_V1_28 = copy.deepcopy(PUT_V1_12)
PUT_V1_28['properties']['allocations'].pop('minProperties')
PUT_V1_28['properties']['consumer_generation'] = CONSUMER_GENERATION
PUT_V1_28['required'].append('consumer_generation')

# 1.34 - 1.37: mappings.
PUT_V1_34 = copy.deepcopy(PUT_V1_28)
PUT_V1_34['properties']['mappings'] = MAPPINGS

# 1.38 -: consumer types.
PUT_V1_38 = copy.deepcopy(PUT_V1_34)
PUT_V1_38['properties']['consumer_type'] = CONSUMER_TYPE
PUT_V1_38['required'].append('consumer_type')


def _post(entry):
    """POST /allocations: ``entry`` per consumer uuid, at least one."""
    entry = copy.deepcopy(entry)
    # NOTE: an empty allocations dict removes that consumer's allocations,
    # at every microversion of POST.
    entry['properties']['allocations'].pop('minProperties', None)
    return {
        'type': 'object',
        'minProperties': 1,
        'patternProperties': {UUID_PATTERN: entry},
        'additionalProperties': False,
    }


POST_V1_13 = _post(PUT_V1_12)
POST_V1_28 = _post(PUT_V1_28)
POST_V1_34 = _post(PUT_V1_34)
POST_V1_38 = _post(PUT_V1_38)


def put_schema(version):
    """The PUT /allocations/{consumer_uuid} schema for ``version``."""
    if version >= (1, 38):
        return PUT_V1_38
    if version >= (1, 34):
        return PUT_V1_34
    if version >= (1, 28):
        return PUT_V1_28
    if version >= (1, 12):
        return PUT_V1_12
    if version >= (1, 8):
        return PUT_V1_8
    return PUT_V1_0


def post_schema(version):
    """The POST /allocations schema for ``version`` (1.13 and later)."""
    if version >= (1, 38):
        return POST_V1_38
    if version >= (1, 34):
        return POST_V1_34
    if version >= (1, 28):
        return POST_V1_28
    return POST_V1_13
