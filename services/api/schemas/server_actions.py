# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON schemas of the power, lock and reset-state action bodies.

Each schema describes the whole body (``{"reboot": {"type": "SOFT"}}``)
so that a 400 names the field from the action down (``reboot/type``), as
Nova's do. Actions without arguments take ``null``, which is what Nova's
clients send.
"""


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

CONFIRM_RESIZE = _body('confirmResize', {'type': 'null'})
REVERT_RESIZE = _body('revertResize', {'type': 'null'})
MIGRATE = _body('migrate', {'type': 'null'})
# NOTE: 2.56 adds an optional target host (null: the scheduler chooses).
MIGRATE_V256 = _body('migrate', {
    'type': ['object', 'null'],
    'properties': {
        'host': {'type': ['string', 'null'], 'minLength': 1,
                 'maxLength': 255},
    },
    'additionalProperties': False,
})
