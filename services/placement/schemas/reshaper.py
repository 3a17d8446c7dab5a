# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas of the POST /reshaper body (1.30 and later).

The body pairs the complete new inventories of some providers, each with
the generation the client saw, with the complete new allocations of some
consumers, in the form of POST /allocations of the same microversion.
"""

import copy

from services.placement.schemas import allocation
from services.placement.schemas import fields
from services.placement.schemas import inventory

INVENTORIES = {
    'type': 'object',
    'patternProperties': {
        allocation.UUID_PATTERN: {
            'type': 'object',
            'properties': {
                'resource_provider_generation': fields.GENERATION,
                'inventories': {
                    'type': 'object',
                    'patternProperties': {
                        inventory.RESOURCE_CLASS_PATTERN: inventory.RECORD,
                    },
                    'additionalProperties': False,
                },
            },
            'required': ['resource_provider_generation', 'inventories'],
            'additionalProperties': False,
        },
    },
    'additionalProperties': False,
}


def _reshape(post_schema):
    allocations = copy.deepcopy(post_schema)
    # NOTE: a reshape may move inventory without touching any allocation.
    allocations.pop('minProperties', None)
    return {
        'type': 'object',
        'properties': {
            'inventories': INVENTORIES,
            'allocations': allocations,
        },
        'required': ['inventories', 'allocations'],
        'additionalProperties': False,
    }


POST_V1_30 = _reshape(allocation.POST_V1_28)
POST_V1_34 = _reshape(allocation.POST_V1_34)
POST_V1_38 = _reshape(allocation.POST_V1_38)


def post_schema(version):
    """The POST /reshaper schema for ``version``."""
    if version >= (1, 38):
        return POST_V1_38
    if version >= (1, 34):
        return POST_V1_34
    return POST_V1_30
