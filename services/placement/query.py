# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Parsing of the query parameters that select providers.

``resources``, ``required`` and ``member_of`` mean the same on
``GET /resource_providers`` and (per request group) on
``GET /allocation_candidates``, so both parse them here. Each parser
returns plain immutable values and raises a 400 whose detail names the
parameter and shows what was given, with upstream's wording.

SQL that applies the parsed filters lives with the data it reads:
``objects/trait.py`` and ``objects/aggregate.py``.
"""

import collections

from services.placement import errors
from services.placement.objects import catalog
from services.placement import util

_RESOURCES_FORM = ('Badly formed resources parameter. Expected resources '
                   'query string parameter in form: '
                   '?resources=VCPU:2,MEMORY_MB:1024. Got: %s.')


RequiredTraits = collections.namedtuple(
    'RequiredTraits', 'all_of any_of forbidden')
RequiredTraits.__doc__ = """Trait constraints of one request.

:all_of: frozenset of names every matching provider (or tree) must have.
:any_of: tuple of frozensets; each needs at least one of its names (1.39).
:forbidden: frozenset of names no matching provider may have.
"""
NO_TRAITS = RequiredTraits(frozenset(), (), frozenset())

MemberOf = collections.namedtuple('MemberOf', 'any_of forbidden')
MemberOf.__doc__ = """Aggregate constraints of one request.

:any_of: tuple of frozensets of aggregate uuids: a provider must be in at
    least one aggregate of every set (repeated parameters AND, 1.24).
:forbidden: frozenset of aggregate uuids a provider must be in none of.
"""
NO_AGGREGATES = MemberOf((), frozenset())


def parse_resources(ctx, value, param='resources'):
    """Parse ``VCPU:2,MEMORY_MB:1024`` into ``{'VCPU': 2, ...}``.

    :param ctx: the request context (to check that classes exist).
    :param value: the raw parameter value.
    :param param: the parameter's name, for messages.
    :raises errors.BadRequest: malformed text, a non-positive amount or an
        unknown resource class.
    """
    if not value:
        raise errors.BadRequest(_RESOURCES_FORM % 'empty string')
    result = {}
    for item in value.split(','):
        name, sep, amount = item.partition(':')
        if not sep or not name:
            raise errors.BadRequest(_RESOURCES_FORM % item)
        try:
            amount = int(amount)
        except ValueError:
            raise errors.BadRequest(
                'Requested resource %s expected positive integer amount. '
                'Got: %s.' % (name, amount))
        if amount < 1:
            raise errors.BadRequest(
                'Requested resource %s requires amount >= 1. Got: %d.'
                % (name, amount))
        result[name] = amount
    unknown = sorted(n for n in result
                     if catalog.RESOURCE_CLASSES.id_for(ctx, n) is None)
    if unknown:
        raise errors.BadRequest(
            'Invalid resource class in %s parameter: %s'
            % (param, ', '.join(unknown)))
    return result


def _required_form(version, param):
    example = ('HW_CPU_X86_VMX,!CUSTOM_MAGIC' if version >= (1, 22)
               else 'HW_CPU_X86_VMX,CUSTOM_MAGIC')
    return ("Invalid query string parameters: Expected '%s' parameter value "
            "of the form: %s." % (param, example))


def _split_traits(value, version, param):
    """(required names, forbidden names) of one comma-separated value."""
    names = value.split(',')
    if not value or any(not n.strip() for n in names):
        raise errors.BadRequest('%s Got: %s' % (
            _required_form(version, param), value))
    required, forbidden = set(), set()
    for name in names:
        name = name.strip()
        if name.startswith('!'):
            if version < (1, 22) or not name[1:]:
                raise errors.BadRequest('%s Got: %s' % (
                    _required_form(version, param), value))
            forbidden.add(name[1:])
        else:
            required.add(name)
    return required, forbidden


def split_required(values, version, param='required'):
    """Check the form of a ``required`` parameter's values; no lookups.

    Before 1.39 only the last value counts (a repeated parameter overwrites
    the first, as upstream); from 1.39 repeated values AND together and a
    value may be ``in:A,B`` (any of A, B). Names are stripped, as upstream
    strips them (``A, !B`` is ``A`` and ``!B``).

    :param values: every value given for the parameter, in order.
    :returns: RequiredTraits of plain names, to check with
        :func:`trait_conflicts` and then :func:`resolve_required`.
    :raises errors.BadRequest: malformed values or ``in:`` before 1.39.
    """
    if not values:
        return NO_TRAITS
    if version < (1, 39):
        values = values[-1:]
    all_of, forbidden, any_of = set(), set(), []
    for value in values:
        if value.startswith('in:'):
            if version < (1, 39):
                raise errors.BadRequest(
                    "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only "
                    "supported since microversion 1.39. Got: %s" % value)
            names, negated = _split_traits(value[3:], version, param)
            if negated:
                raise errors.BadRequest('%s Got: %s' % (
                    _required_form(version, param), value))
            any_of.append(frozenset(names))
            continue
        names, negated = _split_traits(value, version, param)
        all_of |= names
        forbidden |= negated
    return RequiredTraits(frozenset(all_of), tuple(any_of),
                          frozenset(forbidden))


def trait_conflicts(traits):
    """The requirements of ``traits`` that its forbidden traits defeat.

    :param traits: RequiredTraits from :func:`split_required`.
    :returns: sorted list of sorted tuples of names: each required trait
        that is also forbidden, and each any-of set all of whose traits
        are forbidden. Empty when the request can be satisfied.
    """
    if not traits.forbidden:
        return []
    found = {(name,) for name in traits.all_of & traits.forbidden}
    found.update(tuple(sorted(group)) for group in traits.any_of
                 if group <= traits.forbidden)
    return sorted(found)


def resolve_required(ctx, traits):
    """``traits`` checked against the trait catalogue.

    :param traits: RequiredTraits from :func:`split_required`.
    :returns: RequiredTraits ready for the queries (an any-of set of one
        trait becomes a required trait).
    :raises errors.BadRequest: traits that do not exist ("No such
        trait(s): ...").
    """
    if traits == NO_TRAITS:
        return traits
    everything = set(traits.all_of) | set(traits.forbidden)
    for group in traits.any_of:
        everything |= group
    unknown = sorted(n for n in everything
                     if catalog.TRAITS.id_for(ctx, n) is None)
    if unknown:
        raise errors.BadRequest('No such trait(s): %s.' % ', '.join(unknown))
    # NOTE: an any-of group of one trait is simply a required trait.
    all_of = set(traits.all_of)
    any_of = []
    for group in traits.any_of:
        if len(group) == 1:
            all_of |= group
        else:
            any_of.append(group)
    return RequiredTraits(frozenset(all_of), tuple(any_of), traits.forbidden)


def parse_required(ctx, values, version, param='required'):
    """Parse and resolve the values of a ``required`` parameter.

    :func:`split_required` then :func:`resolve_required`.

    :param values: every value given for the parameter, in order.
    :raises errors.BadRequest: malformed values, ``in:`` before 1.39, or
        traits that do not exist ("No such trait(s): ...").
    """
    return resolve_required(ctx, split_required(values, version, param))


def _member_of_uuids(text):
    uuids = text.split(',')
    if not text or not all(util.is_uuid_like(u) for u in uuids):
        raise errors.BadRequest(
            "Invalid query string parameters: Expected 'member_of' "
            "parameter to contain valid UUID(s). Got: %s" % text)
    return frozenset(util.normalize_uuid(u) for u in uuids)


def parse_member_of(values, version):
    """Parse the values of a ``member_of`` parameter into MemberOf.

    Forms: ``UUID`` (1.3), ``in:UUID,UUID`` (1.3), repeated parameters
    meaning AND (1.24), ``!UUID`` and ``!in:UUID,...`` forbidding
    aggregates (1.32).

    :param values: every value given for the parameter, in order.
    :raises errors.BadRequest: naming what is wrong with which value.
    """
    if not values:
        return NO_AGGREGATES
    if len(values) > 1 and version < (1, 24):
        raise errors.BadRequest(
            'Multiple member_of parameters are not supported in the '
            'specified microversion.')
    any_of, forbidden = [], set()
    for value in values:
        negative = value.startswith('!')
        if negative:
            if version < (1, 32):
                raise errors.BadRequest(
                    'Forbidden member_of parameters are not supported in the '
                    'specified microversion.')
            value = value[1:]
        if value.startswith('in:'):
            uuids = _member_of_uuids(value[3:])
        elif ',' in value:
            raise errors.BadRequest(
                "Multiple values for 'member_of' must be prefixed with the "
                "'in:' or '!in:' keyword using the valid microversion. "
                "Got: %s" % value)
        else:
            uuids = _member_of_uuids(value)
        if negative:
            forbidden |= uuids
        else:
            any_of.append(uuids)
    return MemberOf(tuple(any_of), frozenset(forbidden))


def parse_in_tree(value):
    """The provider uuid of an ``in_tree`` value, normalised.

    :raises errors.BadRequest: when it is not a UUID.
    """
    if not util.is_uuid_like(value):
        raise errors.BadRequest(
            "Invalid query string parameters: Expected 'in_tree' parameter "
            "to be a valid UUID. Got: %s" % value)
    return util.normalize_uuid(value)
