# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Resource providers: lookup, generations, and (below) their CRUD.

A provider is a plain dict with the keys of :data:`PROVIDER_COLUMNS` plus
``root_provider_uuid`` and ``parent_provider_uuid``. Every change to a
provider's inventory, traits, aggregates (1.19+) or allocations bumps its
generation with :func:`increment_generation`, which fails with a 409 when
another writer got there first.
"""

import sqlalchemy as sa
from oslo_utils import timeutils

from services.placement.db.api import placement_db
from services.placement.db import tables
from services.placement import errors

_RP = tables.resource_providers
_ROOT = _RP.alias('root')
_PARENT = _RP.alias('parent')

PROVIDER_COLUMNS = ('id', 'uuid', 'name', 'generation', 'root_provider_id',
                    'parent_provider_id', 'created_at', 'updated_at')


def _provider_select():
    return (sa.select(*[_RP.c[name] for name in PROVIDER_COLUMNS],
                      _ROOT.c.uuid.label('root_provider_uuid'),
                      _PARENT.c.uuid.label('parent_provider_uuid'))
            .select_from(_RP.join(_ROOT, _RP.c.root_provider_id == _ROOT.c.id)
                         .outerjoin(_PARENT,
                                    _RP.c.parent_provider_id == _PARENT.c.id)))


@placement_db.reader
def get_by_uuid(ctx, uuid):
    """The provider with ``uuid`` as a dict, or None."""
    row = ctx.session.execute(
        _provider_select().where(_RP.c.uuid == uuid)).mappings().first()
    return dict(row) if row else None


def get_or_404(ctx, uuid):
    """The provider with ``uuid``; 404 naming it when there is none."""
    provider = get_by_uuid(ctx, uuid)
    if provider is None:
        raise errors.NotFound(
            'No resource provider with uuid %s found' % uuid,
            code=errors.RESOURCE_PROVIDER_NOT_FOUND)
    return provider


class ConcurrentUpdate(errors.Conflict):
    """The provider's generation moved on: the caller must re-read."""

    def __init__(self, uuid):
        super().__init__(
            'resource provider generation conflict: the provider %s was '
            'changed by another request. Please update the generation and '
            'try again.' % uuid, code=errors.CONCURRENT_UPDATE)


@placement_db.writer
def increment_generation(ctx, provider, expected=None):
    """Bump a provider's generation if it is still ``expected``.

    Call inside the writer transaction that makes the change, so the change
    and the bump commit or fail together.

    :param provider: the provider dict (its ``id``, ``uuid`` and
        ``generation`` are used).
    :param expected: the generation the caller last saw; defaults to the
        one in ``provider``.
    :returns: the new generation (also stored in ``provider``).
    :raises ConcurrentUpdate: somebody else changed the provider.
    """
    if expected is None:
        expected = provider['generation']
    result = ctx.session.execute(
        _RP.update()
        .where(_RP.c.id == provider['id'])
        .where(_RP.c.generation == expected)
        .values(generation=expected + 1, updated_at=timeutils.utcnow()))
    if result.rowcount != 1:
        raise ConcurrentUpdate(provider['uuid'])
    provider['generation'] = expected + 1
    return expected + 1
