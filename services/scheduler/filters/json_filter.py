# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JsonFilter: a user-written host condition in the ``query`` hint."""

import json
import operator

from services.scheduler import filters

HINT = 'query'


class InvalidQuery(ValueError):
    """The ``query`` hint is not a valid expression."""


def _compare(compare):
    def run(args):
        if len(args) < 2:
            return False
        try:
            return all(compare(args[0], other) for other in args[1:])
        except TypeError as error:
            raise InvalidQuery('cannot compare %r: %s' % (args, error))
    return run


def _in(args):
    return len(args) >= 2 and args[0] in args[1:]


def _not(args):
    # NOTE: Nova negates each argument and passes when any negation
    # holds; with the usual single argument that is plain negation.
    return any(not arg for arg in args)


#: Operator -> function of the evaluated argument list.
OPERATORS = {
    '=': _compare(operator.eq),
    '<': _compare(operator.lt),
    '>': _compare(operator.gt),
    '<=': _compare(operator.le),
    '>=': _compare(operator.ge),
    'in': _in,
    'not': _not,
    'or': any,
    'and': all,
}


def _variable(name, host_state):
    """The host value of ``$name`` (dotted for nested keys), or None."""
    path = name[1:].split('.')
    if not path[0] or path[0].startswith('_'):
        raise InvalidQuery('invalid variable %r' % name)
    value = getattr(host_state, path[0], None)
    for key in path[1:]:
        if isinstance(value, dict):
            value = value.get(key)
        else:
            value = getattr(value, key, None)
    return value


def evaluate(query, host_state):
    """Evaluate a parsed query (``['>=', '$free_ram_mb', 1024]``).

    Strings starting with ``$`` are host state variables; a variable the
    host lacks (None) is dropped from its argument list, so a comparison
    left with fewer than two arguments is false.

    :raises InvalidQuery: for a malformed expression or an impossible
        comparison (a string against a number).
    """
    if not isinstance(query, list) or not query:
        raise InvalidQuery('expected a non-empty list, got %r' % (query,))
    op = query[0]
    if not isinstance(op, str) or op not in OPERATORS:
        raise InvalidQuery('unknown operator %r' % (op,))
    args = []
    for arg in query[1:]:
        if isinstance(arg, list):
            arg = evaluate(arg, host_state)
        elif isinstance(arg, str) and arg.startswith('$'):
            arg = _variable(arg, host_state)
        if arg is not None:
            args.append(arg)
    return OPERATORS[op](args)


def parse(hint):
    """The query expression of a hint value (a JSON string).

    :raises InvalidQuery: when the text is not JSON.
    """
    if isinstance(hint, str):
        try:
            return json.loads(hint)
        except ValueError as error:
            raise InvalidQuery('not JSON: %s' % error)
    # NOTE: an already-decoded expression (in-process callers).
    return hint


class JsonFilter(filters.BaseHostFilter):
    """Pass hosts for which the ``query`` hint's JSON expression holds.

    ``--hint query='[">=", "$free_ram_mb", 1024]'`` keeps hosts with at
    least 1 GiB free. Operators: ``=``, ``<``, ``>``, ``<=``, ``>=`` (the
    first argument against each of the others), ``in`` (the first among
    the others), ``not``, ``or``, ``and``; expressions nest. Variables are
    host state attributes (``$free_ram_mb``, ``$free_disk_mb``,
    ``$vcpus_total``, ``$vcpus_used``, ``$hypervisor_hostname``,
    ``$total_usable_ram_mb``, ``$cpu_info.arch``...). Without the hint
    every host passes; an invalid query fails every host with the reason.
    """

    # NOTE: queries usually read free resources, which change as the
    # instances of one request are placed.
    run_filter_once_per_request = False
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        """True without a query or when the query holds for the host."""
        hint = spec_obj.get_scheduler_hint(HINT)
        if not hint:
            return True
        try:
            result = evaluate(parse(hint), host_state)
        except InvalidQuery as error:
            return self.reject(host_state, 'invalid query hint: %s', error)
        if result:
            return True
        return self.reject(host_state, 'does not satisfy query %s', hint)
