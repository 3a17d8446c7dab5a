# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Schemas for inventory bodies under /resource_providers/{uuid}.

The integer fields are bounded by the 32-bit signed columns that hold
them and the ratio by a single-precision float, so that nothing the
schema admits can overflow the database.
"""

import copy

from services.placement.schemas import fields

MAX_INT = fields.MAX_INT
# NOTE: the largest single-precision float; MySQL's FLOAT column is that.
MAX_FLOAT = 3.40282e+38
RESOURCE_CLASS_PATTERN = '^[A-Z0-9_]+$'


def _int(minimum):
    return {'type': 'integer', 'minimum': minimum, 'maximum': MAX_INT}


_FIELDS = {
    'total': _int(1),
    'reserved': _int(0),
    'min_unit': _int(1),
    'max_unit': _int(1),
    'step_size': _int(1),
    'allocation_ratio': {'type': 'number', 'minimum': 0,
                         'exclusiveMinimum': True, 'maximum': MAX_FLOAT},
}

# One inventory record as it appears inside PUT .../inventories.
RECORD = {
    'type': 'object',
    'properties': copy.deepcopy(_FIELDS),
    'required': ['total'],
    'additionalProperties': False,
}

# POST .../inventories: one record naming its class.
POST = copy.deepcopy(RECORD)
POST['properties']['resource_class'] = {
    'type': 'string', 'pattern': RESOURCE_CLASS_PATTERN}
# NOTE: clients (and upstream's own fixtures) send the generation they
# last saw; it is accepted for compatibility but a POST is not checked
# against it, as upstream.
POST['properties']['resource_provider_generation'] = fields.GENERATION
POST['required'] = ['total', 'resource_class']

# PUT .../inventories/{resource_class}: one record with the generation.
PUT_ONE = copy.deepcopy(RECORD)
PUT_ONE['properties']['resource_provider_generation'] = fields.GENERATION
PUT_ONE['required'] = ['total', 'resource_provider_generation']

# PUT .../inventories: the whole set, keyed by class.
PUT_ALL = {
    'type': 'object',
    'properties': {
        'resource_provider_generation': fields.GENERATION,
        'inventories': {
            'type': 'object',
            'patternProperties': {RESOURCE_CLASS_PATTERN: RECORD},
            'additionalProperties': False,
        },
    },
    'required': ['inventories', 'resource_provider_generation'],
    'additionalProperties': False,
}
