# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas of the /images/{image_id}/metadata writes (below 2.36).

Keys are the built-in catalog's property keys (never one of its fields),
values strings, as Nova's image metadata API takes them.
"""

from services.api.schemas import images

_METADATA = {
    'type': 'object',
    'patternProperties': {
        images._PROPERTY_KEY: {'type': 'string', 'maxLength': 65535},
    },
    'additionalProperties': False,
}

# PUT (replace all) and POST (merge) /images/{image_id}/metadata
METADATA = {
    'type': 'object',
    'properties': {'metadata': _METADATA},
    'required': ['metadata'],
    'additionalProperties': False,
}

# PUT /images/{image_id}/metadata/{key}
META = {
    'type': 'object',
    'properties': {'meta': dict(_METADATA, minProperties=1,
                                maxProperties=1)},
    'required': ['meta'],
    'additionalProperties': False,
}
