# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas of the aggregate bodies: create, update and actions."""

from services.api.schemas import types

_ZONE = {
    'type': ['string', 'null'], 'minLength': 1, 'maxLength': 255,
    'pattern': r'^(?! )[^\x00-\x1f:]*(?<! )$',
}

CREATE = {
    'type': 'object',
    'properties': {
        'aggregate': {
            'type': 'object',
            'properties': {
                'name': types.NAME,
                'availability_zone': _ZONE,
            },
            'required': ['name'],
            'additionalProperties': False,
        },
    },
    'required': ['aggregate'],
    'additionalProperties': False,
}

UPDATE = {
    'type': 'object',
    'properties': {
        'aggregate': {
            'type': 'object',
            'properties': {
                'name': types.NAME,
                'availability_zone': _ZONE,
            },
            'minProperties': 1,
            'additionalProperties': False,
        },
    },
    'required': ['aggregate'],
    'additionalProperties': False,
}

_HOST = {
    'type': 'object',
    'properties': {
        'host': {'type': 'string', 'minLength': 1, 'maxLength': 255},
    },
    'required': ['host'],
    'additionalProperties': False,
}

_METADATA = {
    'type': 'object',
    'properties': {
        'metadata': {
            'type': 'object',
            'patternProperties': {
                '^[a-zA-Z0-9-_:. /]{1,255}$': {
                    'type': ['string', 'null'], 'maxLength': 255,
                },
            },
            'additionalProperties': False,
        },
    },
    'required': ['metadata'],
    'additionalProperties': False,
}

ACTION = {
    'type': 'object',
    'properties': {
        'add_host': _HOST,
        'remove_host': _HOST,
        'set_metadata': _METADATA,
    },
    'minProperties': 1,
    'maxProperties': 1,
    'additionalProperties': False,
}

# 2.81: POST /os-aggregates/{id}/images, the images to pre-cache.
CACHE_IMAGES = {
    'type': 'object',
    'properties': {
        'cache': {
            'type': 'array',
            'minItems': 1,
            'items': {
                'type': 'object',
                'properties': {'id': {'type': 'string', 'format': 'uuid'}},
                'required': ['id'],
                'additionalProperties': False,
            },
        },
    },
    'required': ['cache'],
    'additionalProperties': False,
}
