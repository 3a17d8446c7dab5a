# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas of POST /os-server-external-events, by microversion."""

import copy

# (first microversion, event name)
NAMES = [
    ((2, 1), 'network-changed'),
    ((2, 1), 'network-vif-plugged'),
    ((2, 1), 'network-vif-unplugged'),
    ((2, 1), 'network-vif-deleted'),
    ((2, 51), 'volume-extended'),
    ((2, 76), 'power-update'),
    ((2, 82), 'accelerator-request-bound'),
    ((2, 93), 'volume-reimaged'),
]

_CREATE = {
    'type': 'object',
    'properties': {
        'events': {
            'type': 'array', 'minItems': 1,
            'items': {
                'type': 'object',
                'properties': {
                    'server_uuid': {'type': 'string', 'format': 'uuid'},
                    'name': {'type': 'string', 'enum': []},
                    'status': {'type': 'string',
                               'enum': ['failed', 'completed',
                                        'in-progress']},
                    'tag': {'type': 'string', 'maxLength': 255},
                },
                'required': ['server_uuid', 'name'],
                'additionalProperties': False,
            },
        },
    },
    'required': ['events'],
    'additionalProperties': False,
}


def _schema(version):
    schema = copy.deepcopy(_CREATE)
    schema['properties']['events']['items']['properties']['name'][
        'enum'] = [name for first, name in NAMES if first <= version]
    return schema


# (first microversion, schema), newest first.
CREATE_BY_VERSION = [(first, _schema(first)) for first in sorted(
    {f for f, _n in NAMES}, reverse=True)]
