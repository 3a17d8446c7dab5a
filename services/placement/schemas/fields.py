# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Field schemas every placement schema builds on: text, integers, limits.

Each encodes what a column or the response encoder can hold, once, so that
a value the schema admits can be stored on SQLite, MariaDB and PostgreSQL
and rendered back:

* free text (names, external ids, query values) is a plain string here:
  a NUL (PostgreSQL refuses it in text) or a lone UTF-16 surrogate (the
  UTF-8 drivers and the encoder refuse it) never reaches a schema, since
  the shared WSGI layer refuses both in every JSON body
  (:func:`common.wsgi.util.load_json`) and in the path and query string
  (:mod:`common.wsgi.middleware`), for placement and the compute API alike;
* integers stay within the 32-bit signed columns that hold them
  (amounts, inventory fields; a generation leaves room for its bump) and,
  for ``limit``, within that range too (it becomes an SQL ``LIMIT``).

A schema built here may carry :data:`REFUSAL`: the sentence
:func:`services.placement.util.validate` reports when its ``pattern`` is
not matched, instead of quoting the regular expression.
"""

MAX_INT = 2147483647
MIN_INT = -MAX_INT - 1

# NOTE: an annotation, ignored by jsonschema and by common.wsgi.fastschema;
# only placement's validate() reads it.
REFUSAL = 'x-placement-refusal'


def text(**constraints):
    """A free-text string schema, with extra keywords (``maxLength``...)."""
    schema = {'type': 'string'}
    schema.update(constraints)
    return schema


# A query-string value or other unbounded text.
TEXT = text()


def integer(minimum=MIN_INT, maximum=MAX_INT, nullable=False):
    """An integer schema within a 32-bit signed column by default."""
    return {'type': ['integer', 'null'] if nullable else 'integer',
            'minimum': minimum, 'maximum': maximum}


# NOTE: a change writes the generation sent plus one, so the largest a
# client may send is one less than the column holds. Any other value is
# kept for the conflict check (a stale or made-up one is a 409, as
# upstream); only one no change can start from is 400.
GENERATION = integer(maximum=MAX_INT - 1)
CONSUMER_GENERATION = integer(maximum=MAX_INT - 1, nullable=True)


def _up_to(number):
    """A regular expression of the decimal integers 1..``number``."""
    digits = str(number)
    # Fewer digits than ``number``: any, without a leading zero.
    alternatives = ['[1-9][0-9]{0,%d}' % (len(digits) - 2)] if (
        len(digits) > 1) else []
    # As many digits: a prefix of ``number``, a smaller digit, then any.
    for i, digit in enumerate(digits):
        low = 1 if i == 0 else 0
        if int(digit) > low:
            rest = len(digits) - i - 1
            alternatives.append('%s[%d-%d]%s' % (
                digits[:i], low, int(digit) - 1,
                '[0-9]{%d}' % rest if rest else ''))
    alternatives.append(digits)
    return '^(%s)$' % '|'.join(alternatives)


_POSITIVE = '^[1-9][0-9]*$'


def positive_digits(maximum=MAX_INT):
    """A query-string integer 1..``maximum`` (e.g. ``limit``).

    The first pattern keeps upstream's message for a malformed value; the
    second refuses a well-formed one beyond ``maximum`` (and lets a
    malformed one through, so that only the first reports it).
    """
    return {
        'type': 'string',
        # NOTE: a positive integer; zero and negatives fail the pattern.
        'pattern': _POSITIVE,
        'allOf': [{'pattern': '^(?!%s)|%s' % (_POSITIVE[1:], _up_to(maximum)),
                   REFUSAL: 'the value must be at most %d' % maximum}],
    }


def refusal(error):
    """The sentence for a jsonschema error on a field built here, or None.

    :param error: a ``jsonschema.ValidationError``.
    """
    if error.validator != 'pattern' or not isinstance(error.schema, dict):
        return None
    why = error.schema.get(REFUSAL)
    if why is None:
        return None
    where = '/'.join(str(p) for p in error.absolute_path) or 'value'
    return 'Invalid value for %r: %s. Got: %r' % (where, why, error.instance)
