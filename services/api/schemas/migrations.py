# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas of the query of GET /os-migrations, per microversion.

A query is validated as name -> list of values (a parameter may be given
more than once). Nova's shapes: below 2.59 any other parameter is let
through (and ignored); 2.59 adds paging and ``changes-since`` and
refuses unknown parameters, 2.66 adds ``changes-before``, 2.80 the
``user_id`` and ``project_id`` filters. Paging and time parameters may be
given once; the filters take their last value, as Nova's.
"""

import copy

from services.api.schemas import types

_ANY = {'type': 'array', 'items': {'type': 'string'}}


def _once(schema):
    return {'type': 'array', 'items': schema, 'maxItems': 1}


_DATE_TIME = _once({'type': 'string', 'minLength': 1})

QUERY_V21 = {
    'type': 'object',
    'properties': {
        'hidden': _ANY,
        'host': _ANY,
        'instance_uuid': _ANY,
        'source_compute': _ANY,
        'status': _ANY,
        'migration_type': _ANY,
    },
    'additionalProperties': True,
}

QUERY_V259 = copy.deepcopy(QUERY_V21)
QUERY_V259['properties'].update({
    'limit': _once(types.non_negative_integer()),
    'marker': _once({'type': 'string'}),
    'changes-since': _DATE_TIME,
})
QUERY_V259['additionalProperties'] = False

QUERY_V266 = copy.deepcopy(QUERY_V259)
QUERY_V266['properties']['changes-before'] = _DATE_TIME

QUERY_V280 = copy.deepcopy(QUERY_V266)
QUERY_V280['properties'].update({
    'user_id': _once({'type': 'string'}),
    'project_id': _once({'type': 'string'}),
})
