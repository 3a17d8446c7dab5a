# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas of the flavor bodies: create, update, access actions."""

import copy

from services.api.schemas import types

_FLAVOR_ID = {
    'type': ['string', 'number', 'null'],
    'minLength': 1, 'maxLength': 255,
    'pattern': r'^(?! )[a-zA-Z0-9. _-]+(?<! )$',
    # NOTE: a number id is kept as its text, which must fit the column.
    'minimum': -(2 ** 63 - 1), 'maximum': 2 ** 63 - 1,
}

CREATE = {
    'type': 'object',
    'properties': {
        'flavor': {
            'type': 'object',
            'properties': {
                'name': types.NAME,
                'id': _FLAVOR_ID,
                'ram': types.positive_integer(),
                'vcpus': types.positive_integer(),
                'disk': types.non_negative_integer(),
                'OS-FLV-EXT-DATA:ephemeral': types.non_negative_integer(),
                'swap': types.non_negative_integer(),
                'rxtx_factor': {
                    'type': ['number', 'string'],
                    'pattern': r'^[0-9]+(\.[0-9]+)?$',
                    'minimum': 0, 'exclusiveMinimum': True,
                    'maximum': 3.40282e38,
                },
                'os-flavor-access:is_public': types.BOOLEAN,
            },
            'required': ['name', 'ram', 'vcpus', 'disk'],
            'additionalProperties': False,
        },
    },
    'required': ['flavor'],
    'additionalProperties': False,
}

# 2.55+: a description may be given on create and changed later.
CREATE_V255 = copy.deepcopy(CREATE)
CREATE_V255['properties']['flavor']['properties']['description'] = (
    dict(types.DESCRIPTION, maxLength=65535))

UPDATE_V255 = {
    'type': 'object',
    'properties': {
        'flavor': {
            'type': 'object',
            'properties': {
                'description': dict(types.DESCRIPTION, maxLength=65535),
            },
            'required': ['description'],
            'additionalProperties': False,
        },
    },
    'required': ['flavor'],
    'additionalProperties': False,
}

_TENANT = {
    'type': 'object',
    'properties': {
        'tenant': {'type': 'string', 'minLength': 1, 'maxLength': 255,
                   'pattern': r'^[a-zA-Z0-9-_:. ]*$'},
    },
    'required': ['tenant'],
    'additionalProperties': False,
}

ACTION = {
    'type': 'object',
    'properties': {
        'addTenantAccess': _TENANT,
        'removeTenantAccess': _TENANT,
    },
    'minProperties': 1,
    'maxProperties': 1,
    'additionalProperties': False,
}

_SPEC_KEY = '^[a-zA-Z0-9-_:. ]{1,255}$'
_SPEC_VALUE = {
    'type': ['string', 'number', 'boolean'],
    'minLength': 0, 'maxLength': 255,
}

EXTRA_SPECS_CREATE = {
    'type': 'object',
    'properties': {
        'extra_specs': {
            'type': 'object',
            'patternProperties': {_SPEC_KEY: _SPEC_VALUE},
            'additionalProperties': False,
        },
    },
    'required': ['extra_specs'],
    'additionalProperties': False,
}

EXTRA_SPEC_UPDATE = {
    'type': 'object',
    'patternProperties': {_SPEC_KEY: _SPEC_VALUE},
    'minProperties': 1,
    'maxProperties': 1,
    'additionalProperties': False,
}
