# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas for PUT /resource_providers/{uuid}/aggregates."""

from services.placement.schemas import fields

_AGGREGATE_LIST = {
    'type': 'array',
    'items': {'type': 'string', 'format': 'uuid'},
    'uniqueItems': True,
}

# 1.1 - 1.18: a bare list of aggregate uuids.
PUT_AGGREGATES_SCHEMA_V1_1 = _AGGREGATE_LIST

# 1.19+: the list plus the provider generation the caller last saw.
PUT_AGGREGATES_SCHEMA_V1_19 = {
    'type': 'object',
    'properties': {
        'aggregates': _AGGREGATE_LIST,
        'resource_provider_generation': fields.GENERATION,
    },
    'required': ['aggregates', 'resource_provider_generation'],
    'additionalProperties': False,
}
