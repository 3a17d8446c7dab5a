# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas of the power, lock and reset-state action bodies.

Each schema describes the whole body (``{"reboot": {"type": "SOFT"}}``)
so that a 400 names the field from the action down (``reboot/type``), as
Nova's do. Actions without arguments take ``null``, which is what Nova's
clients send; those whose body Nova never validates take any value
(Tempest sends ``{}``).
"""

from services.api.schemas import types


def _body(name, value):
    return {
        'type': 'object',
        'properties': {name: value},
        'required': [name],
        'additionalProperties': False,
    }


def no_argument(name):
    """``{name: null}``: os-stop, os-start, pause, unpause, suspend..."""
    return _body(name, {'type': 'null'})


def any_argument(name):
    """``{name: <anything>}``: an action whose value Nova never reads."""
    return _body(name, {})


REBOOT = _body('reboot', {
    'type': 'object',
    'properties': {
        'type': {'type': 'string',
                 'enum': ['HARD', 'Hard', 'hard', 'SOFT', 'Soft', 'soft']},
    },
    'required': ['type'],
    'additionalProperties': False,
})

# NOTE: before 2.73 Nova does not validate the lock body (and ignores a
# reason); from 2.73 on, ``locked_reason`` is the only argument.
LOCK_V273 = _body('lock', {
    'type': ['object', 'null'],
    'properties': {
        'locked_reason': {'type': 'string', 'minLength': 1,
                          'maxLength': 255},
    },
    'additionalProperties': False,
})

UNLOCK = _body('unlock', {'type': 'null'})

RESET_STATE = _body('os-resetState', {
    'type': 'object',
    'properties': {
        'state': {'type': 'string', 'enum': ['active', 'error']},
    },
    'required': ['state'],
    'additionalProperties': False,
})

# --- resize and cold migration (services/api/actions/resize.py) ---

RESIZE = _body('resize', {
    'type': 'object',
    'properties': {
        'flavorRef': {'type': ['string', 'integer'], 'minLength': 1,
                      'pattern': r'^(?! )[\S ]*(?<! )$'},
        'OS-DCF:diskConfig': {'type': 'string', 'enum': ['AUTO', 'MANUAL']},
    },
    'required': ['flavorRef'],
    'additionalProperties': False,
})

CONFIRM_RESIZE = any_argument('confirmResize')
REVERT_RESIZE = any_argument('revertResize')
# NOTE: Nova does not read the body of migrate below 2.56 (a host named
# there is ignored, as services/api/actions/resize.py does).
MIGRATE = any_argument('migrate')
# NOTE: 2.56 adds an optional target host (null: the scheduler chooses).
MIGRATE_V256 = _body('migrate', {
    'type': ['object', 'null'],
    'properties': {
        'host': {'type': ['string', 'null'], 'minLength': 1,
                 'maxLength': 255},
    },
    'additionalProperties': False,
})

# --- shelve and evacuate (doc/behaviours.md §shelve,
# §evacuate) ---

# NOTE: Nova's fqdn parameter type: a host name as services report it.
HOSTNAME = {'type': 'string', 'minLength': 1, 'maxLength': 255,
            'pattern': '^[a-zA-Z0-9-._]*$'}

# 2.77: an object naming a zone, or null.
UNSHELVE_V277 = _body('unshelve', {
    'type': ['object', 'null'],
    'properties': {'availability_zone': types.NAME},
    'required': ['availability_zone'],
    'additionalProperties': False,
})

# 2.91: a zone (null unpins the server's) and/or a host, or null. Nova
# requires neither key, so ``{}`` is as null.
UNSHELVE_V291 = _body('unshelve', {
    'type': ['object', 'null'],
    'properties': {
        'availability_zone': {'type': ['string', 'null']},
        'host': HOSTNAME,
    },
    'additionalProperties': False,
})


def _evacuate(shared_storage=False, force=False):
    props = {'host': HOSTNAME, 'adminPass': {'type': 'string'}}
    required = []
    if shared_storage:
        props['onSharedStorage'] = types.BOOLEAN
        required.append('onSharedStorage')
    if force:
        props['force'] = types.BOOLEAN
    body = {'type': 'object', 'properties': props,
            'additionalProperties': False}
    if required:
        body['required'] = required
    return _body('evacuate', body)


# Nova's evacuate bodies: onSharedStorage required below 2.14, force from
# 2.29 to 2.67.
EVACUATE_V21 = _evacuate(shared_storage=True)
EVACUATE_V214 = _evacuate()
EVACUATE_V229 = _evacuate(force=True)
EVACUATE_V268 = _evacuate()
