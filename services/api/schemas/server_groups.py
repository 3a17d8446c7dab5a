# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas of POST /os-server-groups, per microversion range.

Before 2.64 a group has a one-element ``policies`` list; from 2.64 one
``policy`` and, for anti-affinity, ``rules`` (``max_server_per_host``).
The soft policies exist from 2.15.
"""

import copy

from services.api.schemas import types

_POLICIES = ['affinity', 'anti-affinity']
_SOFT = ['soft-affinity', 'soft-anti-affinity']

CREATE = {
    'type': 'object',
    'properties': {
        'server_group': {
            'type': 'object',
            'properties': {
                'name': types.NAME,
                'policies': {
                    'type': 'array',
                    'items': [{'type': 'string', 'enum': _POLICIES}],
                    'uniqueItems': True,
                    'minItems': 1,
                    'maxItems': 1,
                    'additionalItems': False,
                },
            },
            'required': ['name', 'policies'],
            'additionalProperties': False,
        },
    },
    'required': ['server_group'],
    'additionalProperties': False,
}

CREATE_V215 = copy.deepcopy(CREATE)
CREATE_V215['properties']['server_group']['properties']['policies'][
    'items'][0]['enum'] = _POLICIES + _SOFT

CREATE_V264 = {
    'type': 'object',
    'properties': {
        'server_group': {
            'type': 'object',
            'properties': {
                'name': types.NAME,
                'policy': {'type': 'string', 'enum': _POLICIES + _SOFT},
                'rules': {
                    'type': 'object',
                    'properties': {
                        'max_server_per_host': types.positive_integer(),
                    },
                    'additionalProperties': False,
                },
            },
            'required': ['name', 'policy'],
            'additionalProperties': False,
        },
    },
    'required': ['server_group'],
    'additionalProperties': False,
}
