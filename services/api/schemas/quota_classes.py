# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas of PUT /os-quota-class-sets/{id}, by microversion.

Before 2.50 a body may name the network quotas, before 2.57 the file
injection ones (Nova accepted them); from 2.50 it may name the server
group quotas. Berth stores only the resources it enforces.
"""

import copy

from services.api.schemas import types

_LIMIT = types.integer(-1)
_COMMON = ('instances', 'cores', 'ram', 'metadata_items', 'key_pairs')
_INJECTED = ('injected_files', 'injected_file_content_bytes',
             'injected_file_path_bytes')
_NETWORK = ('fixed_ips', 'floating_ips', 'networks', 'security_groups',
            'security_group_rules')
_GROUPS = ('server_groups', 'server_group_members')


def _schema(names):
    return {
        'type': 'object',
        'properties': {
            'quota_class_set': {
                'type': 'object',
                'properties': {name: copy.deepcopy(_LIMIT)
                               for name in names},
                'additionalProperties': False,
            },
        },
        'required': ['quota_class_set'],
        'additionalProperties': False,
    }


UPDATE = _schema(_COMMON + _INJECTED + _NETWORK)
UPDATE_V250 = _schema(_COMMON + _INJECTED + _GROUPS)
UPDATE_V257 = _schema(_COMMON + _GROUPS)
