# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas of the server bodies: create (per microversion), update.

Berth schedules servers; it has no networks or volumes. Their fields are
accepted where Nova's clients always send them (``networks: "auto"`` from
2.37, ``security_groups``...) and otherwise ignored; booting from a volume
is refused by the handler. ``key_name`` names one of the caller's key
pairs, ``description`` (2.19), ``tags`` (2.52) and ``hostname`` (2.90,
a fully qualified one from 2.94) are kept with the server.
"""

import copy

from services.api import hostnames
from services.api.schemas import types

_HOST_LIST = {
    'oneOf': [
        types.UUID,
        {'type': 'array', 'items': types.UUID, 'uniqueItems': True},
    ],
}

SCHEDULER_HINTS = {
    'type': 'object',
    'properties': {
        'group': types.UUID,
        'same_host': _HOST_LIST,
        'different_host': _HOST_LIST,
        # NOTE: a JsonFilter expression, as a JSON string or structure.
        'query': {'type': ['string', 'object', 'array']},
        'target_cell': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'different_cell': {'oneOf': [
            {'type': 'string'}, {'type': 'array',
                                 'items': {'type': 'string'}}]},
        # NOTE: SimpleCIDRAffinityFilter's hints, validated as Nova does:
        # an IPv4 or IPv6 address, and a prefix length or netmask after a
        # slash (``/24``, ``/255.255.255.0``, ``/64``).
        'build_near_host_ip': {'type': 'string',
                               'oneOf': [{'format': 'ipv4'},
                                         {'format': 'ipv6'}]},
        'cidr': {'type': 'string', 'pattern': '^/[0-9a-f.:]+$'},
    },
    # NOTE: out-of-tree filters read hints of their own; Nova passes any.
    'additionalProperties': True,
}

# NOTE: Nova's formats; the handler keeps the address as written.
ACCESS_IPV4 = {'type': 'string', 'format': 'ipv4'}
ACCESS_IPV6 = {'type': 'string', 'format': 'ipv6'}

_NETWORKS = {
    'oneOf': [
        {'type': 'string', 'enum': ['auto', 'none']},
        {
            'type': 'array',
            'items': {
                'type': 'object',
                'properties': {
                    'uuid': {'type': 'string'},
                    'port': {'oneOf': [types.UUID, {'type': 'null'}]},
                    'fixed_ip': {'type': 'string',
                                 'oneOf': [{'format': 'ipv4'},
                                           {'format': 'ipv6'}]},
                    'tag': {'type': 'string'},
                },
                'additionalProperties': False,
            },
        },
    ],
}

_SERVER = {
    'type': 'object',
    'properties': {
        'name': types.NAME_WITH_BLANKS,
        'imageRef': {'type': 'string', 'maxLength': 255},
        'flavorRef': {'type': ['string', 'integer'], 'minLength': 1,
                      'maxLength': 255},
        'adminPass': {'type': 'string'},
        'metadata': types.METADATA,
        'networks': _NETWORKS,
        'OS-DCF:diskConfig': {'type': 'string',
                              'enum': ['AUTO', 'MANUAL']},
        'accessIPv4': ACCESS_IPV4,
        'accessIPv6': ACCESS_IPV6,
        'availability_zone': {'type': 'string', 'minLength': 1,
                              'maxLength': 255},
        'min_count': types.positive_integer(),
        'max_count': types.positive_integer(),
        'return_reservation_id': types.BOOLEAN,
        'key_name': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'user_data': {'type': 'string', 'maxLength': 65535},
        'config_drive': {'type': ['boolean', 'string']},
        'security_groups': {
            'type': 'array',
            'items': {'type': 'object',
                      'properties': {'name': {'type': 'string'}},
                      'additionalProperties': False},
        },
        'block_device_mapping': {'type': 'array'},
        'block_device_mapping_v2': {'type': 'array'},
        'personality': {'type': 'array'},
    },
    'required': ['name', 'flavorRef'],
    'additionalProperties': False,
}

CREATE = {
    'type': 'object',
    'properties': {
        'server': _SERVER,
        'os:scheduler_hints': SCHEDULER_HINTS,
        'OS-SCH-HNT:scheduler_hints': SCHEDULER_HINTS,
    },
    'required': ['server'],
    'additionalProperties': False,
}


def _version(base, changes, required=None):
    schema = copy.deepcopy(base)
    server = schema['properties']['server']
    server['properties'].update(changes)
    if required:
        server['required'] = server['required'] + required
    return schema


CREATE_V219 = _version(CREATE, {'description': types.DESCRIPTION})
CREATE_V237 = _version(CREATE_V219, {}, required=['networks'])
CREATE_V252 = _version(CREATE_V237, {'tags': {
    'type': 'array', 'maxItems': 50,
    'items': {'type': 'string', 'minLength': 1, 'maxLength': 60,
              'pattern': '^[^,/]*$'}}})
CREATE_V257 = copy.deepcopy(CREATE_V252)
del CREATE_V257['properties']['server']['properties']['personality']
CREATE_V263 = _version(CREATE_V257, {'trusted_image_certificates': {
    'type': ['array', 'null'], 'minItems': 1, 'maxItems': 50,
    'uniqueItems': True, 'items': {'type': 'string', 'minLength': 1}}})
CREATE_V274 = _version(CREATE_V263, {
    'host': {'type': 'string', 'minLength': 1, 'maxLength': 255},
    'hypervisor_hostname': {'type': 'string', 'minLength': 1,
                            'maxLength': 255},
})

# 2.90: a hostname of the user's choice; 2.94: a fully qualified one.
CREATE_V290 = _version(CREATE_V274, {'hostname': hostnames.HOSTNAME})
CREATE_V294 = _version(CREATE_V274, {'hostname': hostnames.FQDN})

# (minimum microversion, schema), newest first.
CREATE_BY_VERSION = [
    ((2, 94), CREATE_V294),
    ((2, 90), CREATE_V290),
    ((2, 74), CREATE_V274),
    ((2, 63), CREATE_V263),
    ((2, 57), CREATE_V257),
    ((2, 52), CREATE_V252),
    ((2, 37), CREATE_V237),
    ((2, 19), CREATE_V219),
    ((2, 1), CREATE),
]

UPDATE = {
    'type': 'object',
    'properties': {
        'server': {
            'type': 'object',
            'properties': {
                'name': types.NAME_WITH_BLANKS,
                'accessIPv4': ACCESS_IPV4,
                'accessIPv6': ACCESS_IPV6,
                'OS-DCF:diskConfig': {'type': 'string',
                                      'enum': ['AUTO', 'MANUAL']},
            },
            'additionalProperties': False,
        },
    },
    'required': ['server'],
    'additionalProperties': False,
}

UPDATE_V219 = copy.deepcopy(UPDATE)
UPDATE_V219['properties']['server']['properties']['description'] = (
    types.DESCRIPTION)
UPDATE_V290 = copy.deepcopy(UPDATE_V219)
UPDATE_V290['properties']['server']['properties']['hostname'] = (
    hostnames.HOSTNAME)
UPDATE_V294 = copy.deepcopy(UPDATE_V219)
UPDATE_V294['properties']['server']['properties']['hostname'] = (
    hostnames.FQDN)

# (minimum microversion, schema), newest first.
UPDATE_BY_VERSION = [
    ((2, 94), UPDATE_V294),
    ((2, 90), UPDATE_V290),
    ((2, 19), UPDATE_V219),
    ((2, 1), UPDATE),
]
