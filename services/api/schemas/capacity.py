# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schema of the query of GET /os-berth-capacity/headroom (a Berth
extension, doc/api.md): each parameter once, ``hint`` repeatable.
"""

_NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255}

HEADROOM_QUERY = {
    'type': 'object',
    'properties': {
        'flavor': _NAME,
        'image': _NAME,
        'az': _NAME,
        'aggregate': _NAME,
        'hint': {'type': 'array', 'items': {
            'type': 'string', 'pattern': '^[^=]+=.*$', 'maxLength': 1024}},
        'project_id': _NAME,
    },
    'required': ['flavor'],
    'additionalProperties': False,
}
