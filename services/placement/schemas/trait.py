# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas for /traits and provider traits (microversion 1.6+)."""

from services.placement.schemas import fields

# A trait name as the API accepts it anywhere (standard or custom).
TRAIT_NAME = {
    'type': 'string',
    'pattern': '^[A-Z0-9_]+$',
    'minLength': 1,
    'maxLength': 255,
}

# PUT /traits/{name}: the name, wrapped as {"name": ...}.
CUSTOM_TRAIT = {
    'type': 'object',
    'properties': {
        'name': {
            'type': 'string',
            'pattern': '^CUSTOM_[A-Z0-9_]+$',
            'maxLength': 255,
        },
    },
    'required': ['name'],
    'additionalProperties': False,
}

# GET /traits query string; the values are parsed further by the handler.
LIST_TRAITS_QUERY = {
    'type': 'object',
    'properties': {
        'name': fields.TEXT,
        'associated': fields.TEXT,
    },
    'additionalProperties': False,
}

# PUT /resource_providers/{uuid}/traits
SET_TRAITS_FOR_RP = {
    'type': 'object',
    'properties': {
        'traits': {
            'type': 'array',
            'items': TRAIT_NAME,
        },
        'resource_provider_generation': fields.GENERATION,
    },
    'required': ['traits', 'resource_provider_generation'],
    'additionalProperties': False,
}
