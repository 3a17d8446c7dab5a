# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Bodies of ``os-migrateLive`` and the server migration actions, as
Nova's schemas have them at each microversion.

* 2.1: ``host`` (a name or null), ``block_migration`` and
  ``disk_over_commit`` (booleans), all three required;
* 2.25: ``block_migration`` may be ``"auto"``; ``disk_over_commit`` is
  gone (an unknown property, hence a 400);
* 2.30: ``force`` (a boolean) may be given;
* 2.68: ``force`` is gone again.
"""

import copy

from services.api.schemas import server_actions
from services.api.schemas import types

# Nova's host name (1-255 of letters, digits, '-', '.', '_') or null.
HOST = dict(server_actions.HOSTNAME, type=['string', 'null'])
BLOCK_MIGRATION_AUTO = {'oneOf': [types.BOOLEAN,
                                  {'type': 'string', 'enum': ['auto']}]}

_V2_1 = {
    'type': 'object',
    'properties': {
        'os-migrateLive': {
            'type': 'object',
            'properties': {
                'block_migration': types.BOOLEAN,
                'disk_over_commit': types.BOOLEAN,
                'host': HOST,
            },
            'required': ['block_migration', 'disk_over_commit', 'host'],
            'additionalProperties': False,
        },
    },
    'required': ['os-migrateLive'],
    'additionalProperties': False,
}


def _variant(auto=False, force=False):
    schema = copy.deepcopy(_V2_1)
    body = schema['properties']['os-migrateLive']
    if auto:
        del body['properties']['disk_over_commit']
        body['properties']['block_migration'] = BLOCK_MIGRATION_AUTO
        body['required'] = ['block_migration', 'host']
    if force:
        body['properties']['force'] = types.BOOLEAN
    return schema


# NOTE: built once (validators are cached per schema object), newest
# first: (first microversion, schema).
MIGRATE_LIVE = (
    ((2, 68), _variant(auto=True)),
    ((2, 30), _variant(auto=True, force=True)),
    ((2, 25), _variant(auto=True)),
    ((2, 1), _V2_1),
)

FORCE_COMPLETE = {
    'type': 'object',
    'properties': {'force_complete': {'type': 'null'}},
    'required': ['force_complete'],
    'additionalProperties': False,
}
