# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Query-string schemas of ``GET /allocation_candidates``.

Every parameter arrived with a microversion; a parameter the asked version
does not know is refused as "unexpected", as upstream does. Suffixed
(granular) parameters are matched by patterns: digits at 1.25-1.32,
``[a-zA-Z0-9_-]{1,64}`` from 1.33.
"""

import copy

from services.placement.schemas import fields

_STRING = fields.TEXT
_NUMBER_SUFFIX = '([1-9][0-9]*)?'
_STRING_SUFFIX = '([a-zA-Z0-9_-]{1,64})?'

V1_10 = {
    'type': 'object',
    'properties': {
        'resources': _STRING,
    },
    'required': ['resources'],
    'additionalProperties': False,
}

V1_16 = copy.deepcopy(V1_10)
# NOTE: a positive integer within what SQL's LIMIT takes everywhere.
V1_16['properties']['limit'] = fields.positive_digits()

V1_17 = copy.deepcopy(V1_16)
V1_17['properties']['required'] = _STRING

V1_21 = copy.deepcopy(V1_17)
V1_21['properties']['member_of'] = _STRING


def _granular(base, suffix, in_tree=False, root_required=False,
              same_subtree=False):
    schema = copy.deepcopy(base)
    del schema['required']
    schema['properties']['group_policy'] = {
        'type': 'string', 'enum': ['none', 'isolate']}
    kinds = ['resources', 'required', 'member_of']
    if in_tree:
        kinds.append('in_tree')
        schema['properties']['in_tree'] = _STRING
    if root_required:
        schema['properties']['root_required'] = _STRING
    if same_subtree:
        schema['properties']['same_subtree'] = _STRING
    schema['patternProperties'] = {
        '^%s%s$' % (kind, suffix): _STRING for kind in kinds}
    return schema


V1_25 = _granular(V1_21, _NUMBER_SUFFIX)
V1_31 = _granular(V1_21, _NUMBER_SUFFIX, in_tree=True)
V1_33 = _granular(V1_21, _STRING_SUFFIX, in_tree=True)
V1_35 = _granular(V1_21, _STRING_SUFFIX, in_tree=True, root_required=True)
V1_36 = _granular(V1_21, _STRING_SUFFIX, in_tree=True, root_required=True,
                  same_subtree=True)

_BY_VERSION = [((1, 36), V1_36), ((1, 35), V1_35), ((1, 33), V1_33),
               ((1, 31), V1_31), ((1, 25), V1_25), ((1, 21), V1_21),
               ((1, 17), V1_17), ((1, 16), V1_16), ((1, 10), V1_10)]


def for_version(version):
    """The query schema for microversion ``version`` (1.10 or later)."""
    for minimum, schema in _BY_VERSION:
        if version >= minimum:
            return schema
    return V1_10
