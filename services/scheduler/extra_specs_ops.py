# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The operator mini-language of flavor extra specs and host capabilities.

A requirement such as ``>= 4096``, ``s== QEMU``, ``<in> avx`` or
``<or> fast <or> medium`` is matched against one host-side value (an
aggregate metadata value, a host state attribute) by :func:`match`. The
operators are Nova's, with Nova's meanings:

========== ============================================================
``=``      numerically at least (``= 4`` is met by 4, 8...), as for vCPUs
``==``     numerically equal; ``!=``, ``>=``, ``<=`` likewise
``s==``    equal as strings; ``s!=``, ``s>=``, ``s>``, ``s<=``, ``s<``
``<in>``   the operand is a substring (or element) of the value
``<all-in>`` every operand word is in the value
``<or>``   ``<or> a <or> b``: the value equals one of the alternatives
(none)     the whole requirement equals the value as a string
========== ============================================================
"""

import operator

# NOTE: numeric operators compare floats, so '16' and '16.0' are equal and
# a value or operand that is not a number simply fails to match.
_NUMERIC = {
    '=': operator.ge,
    '==': operator.eq,
    '!=': operator.ne,
    '>=': operator.ge,
    '<=': operator.le,
}

_STRING = {
    's==': operator.eq,
    's!=': operator.ne,
    's>=': operator.ge,
    's>': operator.gt,
    's<=': operator.le,
    's<': operator.lt,
}

OR = '<or>'
IN = '<in>'
ALL_IN = '<all-in>'

#: Every operator :func:`match` understands.
OPERATORS = frozenset(list(_NUMERIC) + list(_STRING) + [OR, IN, ALL_IN])


def _numeric(compare, value, operand):
    try:
        return compare(float(value), float(operand))
    except (TypeError, ValueError):
        return False


def _contains(value, item):
    # NOTE: a string value means substring, a list or set means element
    # (a host's CPU feature list, for instance).
    try:
        return item in value
    except TypeError:
        return False


def match(value, req):
    """Whether the host-side ``value`` satisfies the requirement ``req``.

    :param value: the host's value (usually a string; a list or set for
        collections such as CPU features), or None when the host has none.
    :param req: the requirement, e.g. ``'>= 2'`` or ``'fast'``. Its first
        whitespace-separated word is the operator when it is one of
        :data:`OPERATORS`; otherwise ``req`` must equal ``value``.
    :returns: False for a None value and for an operator without operand.
    """
    if value is None:
        return False
    words = req.split() if isinstance(req, str) else []
    if not words or words[0] not in OPERATORS:
        return value == req
    op, operands = words[0], words[1:]
    if not operands:
        return False
    if op == OR:
        # NOTE: '<or> a <or> b' names alternatives between the '<or>'
        # separators; the separators themselves are not alternatives.
        choices = [word for word in operands if word != OR]
        return bool(choices) and str(value) in choices
    if op == ALL_IN:
        return all(_contains(value, word) for word in operands)
    if op == IN:
        return _contains(value, operands[0])
    if op in _NUMERIC:
        return _numeric(_NUMERIC[op], value, operands[0])
    return _STRING[op](str(value), operands[0])
