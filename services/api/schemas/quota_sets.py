# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schema of PUT /os-quota-sets/{project_id}."""

from services.api.schemas import types

_LIMIT = types.integer(-1)

UPDATE = {
    'type': 'object',
    'properties': {
        'quota_set': {
            'type': 'object',
            'properties': {
                'instances': _LIMIT,
                'cores': _LIMIT,
                'ram': _LIMIT,
                'metadata_items': _LIMIT,
                'key_pairs': _LIMIT,
                'server_groups': _LIMIT,
                'server_group_members': _LIMIT,
                'force': types.BOOLEAN,
            },
            'additionalProperties': False,
        },
    },
    'required': ['quota_set'],
    'additionalProperties': False,
}
