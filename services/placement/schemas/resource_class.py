# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas for /resource_classes bodies (microversion 1.2 and later)."""

# NOTE: only custom classes can be created or renamed through the API; the
# standard ones come from os-resource-classes.
CUSTOM_NAME = {
    'type': 'string',
    'pattern': '^CUSTOM_[A-Z0-9_]+$',
    'maxLength': 255,
}

# POST /resource_classes (1.2+), PUT /resource_classes/{name} (1.2-1.6),
# and the {name} of PUT /resource_classes/{name} (1.7+) wrapped in a dict.
POST_RC_SCHEMA_V1_2 = {
    'type': 'object',
    'properties': {
        'name': CUSTOM_NAME,
    },
    'required': ['name'],
    'additionalProperties': False,
}

PUT_RC_SCHEMA_V1_2 = POST_RC_SCHEMA_V1_2
