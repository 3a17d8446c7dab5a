# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas of /servers/{id}/metadata and /servers/{id}/tags bodies.

Metadata keys and values as at boot (:data:`types.METADATA`); a tag is
1-60 characters without ``/`` or ``,`` (Nova's).
"""

import copy

from services.api.schemas import types

METADATA = {
    'type': 'object',
    'properties': {'metadata': types.METADATA},
    'required': ['metadata'],
    'additionalProperties': False,
}

_ONE_ITEM = copy.deepcopy(types.METADATA)
_ONE_ITEM.update({'minProperties': 1, 'maxProperties': 1})

META_ITEM = {
    'type': 'object',
    'properties': {'meta': _ONE_ITEM},
    'required': ['meta'],
    'additionalProperties': False,
}

TAG = {'type': 'string', 'minLength': 1, 'maxLength': 60,
       'pattern': '^[^,/]*$'}

TAGS = {
    'type': 'object',
    'properties': {'tags': {'type': 'array', 'items': TAG}},
    'required': ['tags'],
    'additionalProperties': False,
}
