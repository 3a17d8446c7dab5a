# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas of the os-keypairs create body, per microversion.

As Nova: a name of 1-255 letters, digits, blanks, ``_`` and ``-``
(``@`` and ``.`` too from 2.92); ``type`` (ssh, x509) from 2.2;
``user_id`` (admins) from 2.10; ``public_key`` required from 2.92, where
Nova stopped generating keys.
"""

import copy

from services.api.schemas import types

_NAME = {'allOf': [types.NAME, {'type': 'string',
                                'pattern': '^[a-zA-Z0-9 _-]+$'}]}
_NAME_V292 = {'allOf': [types.NAME, {'type': 'string',
                                     'pattern': '^[a-zA-Z0-9 _@.-]+$'}]}

CREATE = {
    'type': 'object',
    'properties': {
        'keypair': {
            'type': 'object',
            'properties': {
                'name': _NAME,
                'public_key': {'type': 'string'},
            },
            'required': ['name'],
            'additionalProperties': False,
        },
    },
    'required': ['keypair'],
    'additionalProperties': False,
}


def _version(base, changes, required=None, name=None):
    schema = copy.deepcopy(base)
    keypair = schema['properties']['keypair']
    keypair['properties'].update(changes)
    if name is not None:
        keypair['properties']['name'] = name
    if required:
        keypair['required'] = keypair['required'] + required
    return schema


CREATE_V22 = _version(CREATE, {'type': {'type': 'string',
                                        'enum': ['ssh', 'x509']}})
CREATE_V210 = _version(CREATE_V22, {'user_id': {'type': 'string'}})
CREATE_V292 = _version(CREATE_V210, {}, required=['public_key'],
                       name=_NAME_V292)

# (minimum microversion, schema), newest first.
CREATE_BY_VERSION = [
    ((2, 92), CREATE_V292),
    ((2, 10), CREATE_V210),
    ((2, 2), CREATE_V22),
    ((2, 1), CREATE),
]
