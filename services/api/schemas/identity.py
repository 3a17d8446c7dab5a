# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schema of POST /identity/v3/auth/tokens (Keystone's shape)."""

# NOTE: a noauth2 token is "user:project", so neither name may hold a
# colon; Keystone's own limit on both is 255 characters (64 for a user).
_NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255,
         'pattern': r'^[^:\x00-\x1f]+$'}

_DOMAIN = {
    'type': 'object',
    'properties': {'id': {'type': 'string'}, 'name': {'type': 'string'}},
}

_PASSWORD = {
    'type': 'object',
    'properties': {
        'user': {
            'type': 'object',
            'properties': {
                'id': _NAME,
                'name': _NAME,
                'password': {'type': 'string'},
                'domain': _DOMAIN,
            },
            'anyOf': [{'required': ['id']}, {'required': ['name']}],
        },
    },
    'required': ['user'],
}

_TOKEN = {
    'type': 'object',
    'properties': {'id': {'type': 'string', 'minLength': 1}},
    'required': ['id'],
}

_SCOPE = {
    # NOTE: Keystone also takes the string "unscoped".
    'type': ['object', 'string'],
    'properties': {
        'project': {
            'type': 'object',
            'properties': {'id': _NAME, 'name': _NAME, 'domain': _DOMAIN},
            'anyOf': [{'required': ['id']}, {'required': ['name']}],
        },
        'domain': _DOMAIN,
        'system': {'type': 'object'},
    },
}

CREATE_TOKEN = {
    'type': 'object',
    'properties': {
        'auth': {
            'type': 'object',
            'properties': {
                'identity': {
                    'type': 'object',
                    'properties': {
                        'methods': {
                            'type': 'array', 'minItems': 1,
                            'items': {'type': 'string'},
                        },
                        'password': _PASSWORD,
                        'token': _TOKEN,
                    },
                    'required': ['methods'],
                },
                'scope': _SCOPE,
            },
            'required': ['identity'],
        },
    },
    'required': ['auth'],
}
