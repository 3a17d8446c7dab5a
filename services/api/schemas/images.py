# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas of the built-in image catalog's bodies (Glance v2 shapes).

An image create body has Glance's fields plus any number of string
properties (``hw_cpu_policy``...); a PATCH body is Glance's JSON-patch
list (``add``, ``replace`` and ``remove`` of top-level keys), whose
values are checked against :data:`CREATE`, key by key, as Glance checks
a patched image against its image schema.
"""

# The images table's Integer columns (min_ram, min_disk): 32-bit signed.
_COLUMN_INT = {'type': 'integer', 'minimum': 0, 'maximum': 2 ** 31 - 1}

# NOTE: any key but the fields above; patternProperties would otherwise
# also apply to them (and ask min_ram to be a string).
_PROPERTY_KEY = ('^(?!(id|name|visibility|protected|os_hidden|owner|'
                 'disk_format|container_format|min_ram|min_disk|tags)$)'
                 '[a-zA-Z0-9_:.-]{1,255}$')

CREATE = {
    'type': 'object',
    'properties': {
        'id': {'type': 'string', 'format': 'uuid'},
        'name': {'type': ['string', 'null'], 'maxLength': 255},
        'visibility': {'type': 'string',
                       'enum': ['public', 'private', 'shared', 'community']},
        'protected': {'type': 'boolean'},
        'os_hidden': {'type': 'boolean'},
        'owner': {'type': ['string', 'null'], 'maxLength': 255},
        'disk_format': {'type': ['string', 'null'],
                        'enum': [None, 'ami', 'ari', 'aki', 'vhd', 'vhdx',
                                 'vmdk', 'raw', 'qcow2', 'vdi', 'iso',
                                 'ploop']},
        'container_format': {'type': ['string', 'null'],
                             'enum': [None, 'ami', 'ari', 'aki', 'bare',
                                      'ovf', 'ova', 'docker',
                                      'compressed']},
        'min_ram': _COLUMN_INT,
        'min_disk': _COLUMN_INT,
        'tags': {'type': 'array',
                 'items': {'type': 'string', 'maxLength': 255}},
    },
    'patternProperties': {
        _PROPERTY_KEY: {'type': ['string', 'null'], 'maxLength': 65535},
    },
    'additionalProperties': False,
}

PATCH = {
    'type': 'array',
    'items': {
        'type': 'object',
        'properties': {
            'op': {'type': 'string', 'enum': ['add', 'replace', 'remove']},
            'path': {'type': 'string', 'pattern': '^/[a-zA-Z0-9_:.-]+$'},
            'value': {},
        },
        'required': ['op', 'path'],
        'additionalProperties': False,
    },
}
