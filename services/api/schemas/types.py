# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Parameter types shared by the compute API's schemas (Nova's shapes).

Nova accepts numbers given as JSON numbers or as digit strings, and most
names as any printable string without leading or trailing blanks; the
types here say the same, so that bodies valid for Nova are valid here.
A NUL character or a lone UTF-16 surrogate is refused in every string of
every body before any schema is applied (:func:`common.wsgi.util.load_json`).
"""


def integer(minimum=0, maximum=2 ** 31 - 1):
    """An integer, or a string of digits, within [minimum, maximum].

    The default maximum is what a 32-bit signed (``Integer``) column
    holds. JSON Schema bounds numbers only; the validators of
    :mod:`common.wsgi.util` bound the digit strings this type allows too.
    """
    return {
        'type': ['integer', 'string'],
        'pattern': '^-?[0-9]+$',
        'minimum': minimum,
        'maximum': maximum,
    }


def non_negative_integer():
    return integer(0)


def positive_integer():
    return integer(1)


# A name: 1-255 printable characters, no leading or trailing blanks.
NAME = {
    'type': 'string', 'minLength': 1, 'maxLength': 255,
    'pattern': r'^(?! )[^\x00-\x1f]*(?<! )$',
}

# A name that may have blanks around it (Nova's legacy server names).
NAME_WITH_BLANKS = {
    'type': 'string', 'minLength': 1, 'maxLength': 255,
    'pattern': r'^[^\x00-\x1f]*$',
}

DESCRIPTION = {
    'type': ['string', 'null'], 'minLength': 0, 'maxLength': 255,
    'pattern': r'^[^\x00-\x08\x0b\x0c\x0e-\x1f]*$',
}

BOOLEAN = {
    'type': ['boolean', 'string'],
    'enum': [True, 'True', 'TRUE', 'true', '1', 'ON', 'On', 'on',
             'YES', 'Yes', 'yes',
             False, 'False', 'FALSE', 'false', '0', 'OFF', 'Off', 'off',
             'NO', 'No', 'no'],
}

UUID = {'type': 'string', 'format': 'uuid'}

# Metadata: string keys of 1-255 characters to strings of at most 255.
METADATA = {
    'type': 'object',
    'patternProperties': {
        '^[a-zA-Z0-9-_:. ]{1,255}$': {'type': 'string', 'maxLength': 255},
    },
    'additionalProperties': False,
}


def to_int(value):
    """An integer parameter's value (the schema allowed digit strings)."""
    return None if value is None else int(value)


def to_bool(value):
    """A boolean parameter's value (the schema allowed 'true', 'on'...)."""
    if isinstance(value, bool):
        return value
    return str(value).lower() in ('true', '1', 'on', 'yes')
