# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schema of PUT /os-hosts/{host_name} (below 2.43)."""

_SWITCH = {'type': 'string',
           'enum': ['enable', 'disable', 'Enable', 'Disable', 'ENABLE',
                    'DISABLE']}

UPDATE = {
    'type': 'object',
    'properties': {
        'status': _SWITCH,
        'maintenance_mode': _SWITCH,
    },
    'anyOf': [{'required': ['status']}, {'required': ['maintenance_mode']}],
    'additionalProperties': False,
}
