# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Schemas for /resource_providers bodies and its list query string.

Each microversion that changed a shape gets its own dict; the ``for_*``
functions pick the one a request's version asks for.
"""

import copy

from services.placement.schemas import fields

_UUID = {'type': 'string', 'format': 'uuid'}
# NOTE: the column is 200 characters wide; a longer name is refused
# by the schema rather than truncated by the database.
_NAME = fields.text(maxLength=200)
_PARENT = {'anyOf': [_UUID, {'type': 'null'}]}

POST_V1_0 = {
    'type': 'object',
    'properties': {
        'name': _NAME,
        'uuid': _UUID,
    },
    'required': ['name'],
    'additionalProperties': False,
}

# 1.14: nested providers name their parent.
POST_V1_14 = copy.deepcopy(POST_V1_0)
POST_V1_14['properties']['parent_provider_uuid'] = _PARENT

PUT_V1_0 = {
    'type': 'object',
    'properties': {
        'name': _NAME,
    },
    'required': ['name'],
    'additionalProperties': False,
}

PUT_V1_14 = copy.deepcopy(PUT_V1_0)
PUT_V1_14['properties']['parent_provider_uuid'] = _PARENT

# GET /resource_providers: every filter arrived with a microversion.
LIST_V1_0 = {
    'type': 'object',
    'properties': {
        'name': fields.TEXT,
        'uuid': _UUID,
    },
    'additionalProperties': False,
}
LIST_V1_3 = copy.deepcopy(LIST_V1_0)
LIST_V1_3['properties']['member_of'] = fields.TEXT
LIST_V1_4 = copy.deepcopy(LIST_V1_3)
LIST_V1_4['properties']['resources'] = fields.TEXT
LIST_V1_14 = copy.deepcopy(LIST_V1_4)
LIST_V1_14['properties']['in_tree'] = _UUID
LIST_V1_18 = copy.deepcopy(LIST_V1_14)
LIST_V1_18['properties']['required'] = fields.TEXT

_LIST_BY_VERSION = [((1, 18), LIST_V1_18), ((1, 14), LIST_V1_14),
                    ((1, 4), LIST_V1_4), ((1, 3), LIST_V1_3),
                    ((1, 0), LIST_V1_0)]


def for_create(version):
    """The POST body schema for ``version``."""
    return POST_V1_14 if version >= (1, 14) else POST_V1_0


def for_update(version):
    """The PUT body schema for ``version``."""
    return PUT_V1_14 if version >= (1, 14) else PUT_V1_0


def for_list(version):
    """The GET /resource_providers query schema for ``version``."""
    for minimum, schema in _LIST_BY_VERSION:
        if version >= minimum:
            return schema
    return LIST_V1_0
