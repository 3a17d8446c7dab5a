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

from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from services.placement.db.api import placement_db
from services.placement.db import tables
from services.placement import errors
from services.placement.objects import catalog

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


@placement_db.reader
def read_with(ctx, uuid, read):
    """(the provider ``uuid``, ``read(ctx, its id)``), read in one
    transaction: the generation answered with the data is the one the
    data was read at, and a GET costs one transaction, not two.

    :raises errors.NotFound: as :func:`get_or_404`.
    """
    provider = get_or_404(ctx, uuid)
    return provider, read(ctx, provider['id'])


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
    return bump_generation(ctx.session.connection(), provider, expected)


# NOTE: built once: this runs on every claim and composing the statement
# cost more than running it. The parameter names must differ from the
# column names that an UPDATE's SET clause reserves.
_BUMP = (_RP.update()
         .where(_RP.c.id == sa.bindparam('b_id'))
         .where(_RP.c.generation == sa.bindparam('b_expected'))
         .values(generation=sa.bindparam('b_generation'),
                 updated_at=sa.bindparam('b_now')))


def bump_generation(conn, provider, expected=None):
    """:func:`increment_generation` in an open write transaction.

    :param conn: the transaction's connection.
    """
    if expected is None:
        expected = provider['generation']
    result = conn.execute(_BUMP, {
        'b_id': provider['id'], 'b_expected': expected,
        'b_generation': expected + 1, 'b_now': timeutils.utcnow()})
    if result.rowcount != 1:
        raise ConcurrentUpdate(provider['uuid'])
    provider['generation'] = expected + 1
    return expected + 1


# ---------------------------------------------------------------------------
# CRUD and listing of providers.
# ---------------------------------------------------------------------------

_INV = tables.inventories
_ALLOC = tables.allocations
_RP_TRAITS = tables.resource_provider_traits
_RP_AGGS = tables.resource_provider_aggregates

# Marks "no parent_provider_uuid in the request" as opposed to null.
UNCHANGED = object()


def _bad_parent(action, name, uuid, reason):
    if action == 'create':
        return errors.BadRequest(
            'Unable to create resource provider "%s", %s: %s'
            % (name, uuid, reason))
    return errors.BadRequest(
        'Unable to save resource provider %s: %s' % (uuid, reason))


def _check_unique(ctx, uuid=None, name=None, exclude_id=None):
    """409 when another provider has ``uuid`` or ``name``."""
    if uuid is not None and ctx.session.execute(
            sa.select(_RP.c.id).where(_RP.c.uuid == uuid)).first():
        raise errors.Conflict(
            'Conflicting resource provider uuid: %s already exists.' % uuid)
    if name is not None:
        query = sa.select(_RP.c.id).where(_RP.c.name == name)
        if exclude_id is not None:
            query = query.where(_RP.c.id != exclude_id)
        if ctx.session.execute(query).first():
            raise errors.Conflict(
                'Conflicting resource provider name: %s already exists.'
                % name, code=errors.DUPLICATE_NAME)


def _duplicate(exc, uuid, name):
    # NOTE: only reached when a concurrent request won the race between
    # our check and our write; the database says which column clashed, in
    # its own words, so the message stays general.
    return errors.Conflict(
        'Conflicting resource provider %s (%s) already exists.'
        % (name, uuid), code=errors.DUPLICATE_NAME)


@placement_db.writer
def create(ctx, uuid, name, parent_uuid=None):
    """Create a provider; a root unless ``parent_uuid`` is given.

    :param uuid: the (normalised) uuid of the new provider.
    :param parent_uuid: the (normalised) uuid of its parent, or None.
    :returns: the new provider dict.
    :raises errors.BadRequest: the parent is itself or does not exist.
    :raises errors.Conflict: the uuid or name is taken.
    """
    root_id = parent_id = None
    if parent_uuid is not None:
        if parent_uuid == uuid:
            raise _bad_parent(
                'create', name, uuid,
                'parent provider UUID cannot be same as UUID. Please '
                'modify UUID or parent provider UUID.')
        parent = get_by_uuid(ctx, parent_uuid)
        if parent is None:
            raise _bad_parent('create', name, uuid,
                              'parent provider UUID does not exist.')
        root_id, parent_id = parent['root_provider_id'], parent['id']
    _check_unique(ctx, uuid=uuid, name=name)
    try:
        result = ctx.session.execute(_RP.insert().values(
            uuid=uuid, name=name, generation=0, root_provider_id=root_id,
            parent_provider_id=parent_id, created_at=timeutils.utcnow()))
    except db_exc.DBDuplicateEntry as exc:
        raise _duplicate(exc, uuid, name)
    if root_id is None:
        # NOTE: a root is its own root; its id exists only once inserted.
        new_id = result.inserted_primary_key[0]
        ctx.session.execute(_RP.update().where(_RP.c.id == new_id)
                            .values(root_provider_id=new_id))
    return get_by_uuid(ctx, uuid)


def _subtree_ids(ctx, provider):
    """The ids of ``provider`` and all its descendants (one query)."""
    children = {}
    for id_, parent_id in ctx.session.execute(
            sa.select(_RP.c.id, _RP.c.parent_provider_id)
            .where(_RP.c.root_provider_id == provider['root_provider_id'])):
        children.setdefault(parent_id, []).append(id_)
    found, todo = set(), [provider['id']]
    while todo:
        current = todo.pop()
        found.add(current)
        todo.extend(children.get(current, ()))
    return found


def _set_parent(ctx, provider, parent_uuid, may_reparent):
    """Move ``provider`` (and its subtree) under ``parent_uuid``."""
    uuid = provider['uuid']
    current = provider['parent_provider_uuid']
    if parent_uuid == current:
        return
    subtree = _subtree_ids(ctx, provider)
    if parent_uuid is None:
        if not may_reparent:
            raise _bad_parent('update', None, uuid,
                              'un-parenting a provider is not currently '
                              'allowed.')
        new_root, new_parent_id = provider['id'], None
    else:
        parent = get_by_uuid(ctx, parent_uuid)
        if parent is None:
            raise _bad_parent('update', None, uuid,
                              'parent provider UUID does not exist.')
        if current is not None and not may_reparent:
            raise _bad_parent('update', None, uuid,
                              're-parenting a provider is not currently '
                              'allowed.')
        if parent['id'] in subtree:
            raise _bad_parent('update', None, uuid,
                              'creating loop in the provider tree is not '
                              'allowed.')
        new_root, new_parent_id = parent['root_provider_id'], parent['id']
    ctx.session.execute(_RP.update().where(_RP.c.id == provider['id'])
                        .values(parent_provider_id=new_parent_id))
    if new_root != provider['root_provider_id']:
        # NOTE: the whole subtree moves with the provider: every
        # descendant gets the new root in the same statement.
        ctx.session.execute(_RP.update().where(_RP.c.id.in_(subtree))
                            .values(root_provider_id=new_root))


@placement_db.writer
def update(ctx, provider, name, parent_uuid=UNCHANGED, may_reparent=False):
    """Rename a provider and (1.14+) set, change or clear its parent.

    The generation is not bumped: it guards inventories, traits,
    aggregates and allocations, not the provider's own fields.

    :param parent_uuid: the new parent's normalised uuid, None for no
        parent, or :data:`UNCHANGED`.
    :param may_reparent: True from 1.37, where a provider that has a
        parent may move to another or become a root.
    :returns: the updated provider dict.
    """
    if parent_uuid is not UNCHANGED:
        _set_parent(ctx, provider, parent_uuid, may_reparent)
    _check_unique(ctx, name=name, exclude_id=provider['id'])
    try:
        ctx.session.execute(_RP.update().where(_RP.c.id == provider['id'])
                            .values(name=name, updated_at=timeutils.utcnow()))
    except db_exc.DBDuplicateEntry as exc:
        raise _duplicate(exc, provider['uuid'], name)
    return get_by_uuid(ctx, provider['uuid'])


@placement_db.writer
def delete(ctx, provider):
    """Delete a provider with its inventories, traits and aggregate links.

    :raises errors.Conflict: it has allocations or child providers.
    """
    rp_id = provider['id']
    if ctx.session.execute(sa.select(_ALLOC.c.id).where(
            _ALLOC.c.resource_provider_id == rp_id).limit(1)).first():
        raise errors.Conflict(
            'Unable to delete resource provider %s: Resource provider has '
            'allocations.' % provider['uuid'], code=errors.PROVIDER_IN_USE)
    if ctx.session.execute(sa.select(_RP.c.id).where(
            _RP.c.parent_provider_id == rp_id).limit(1)).first():
        raise errors.Conflict(
            'Unable to delete parent resource provider %s: It has child '
            'resource providers.' % provider['uuid'],
            code=errors.PROVIDER_CANNOT_DELETE_PARENT)
    for table in (_INV, _RP_TRAITS, _RP_AGGS):
        ctx.session.execute(
            table.delete().where(table.c.resource_provider_id == rp_id))
    # NOTE: a root refers to itself; InnoDB refuses to delete a row that
    # a foreign key (even its own) still points at, so cut the links first.
    ctx.session.execute(_RP.update().where(_RP.c.id == rp_id).values(
        root_provider_id=None, parent_provider_id=None))
    result = ctx.session.execute(_RP.delete().where(_RP.c.id == rp_id))
    if result.rowcount != 1:
        raise ConcurrentUpdate(provider['uuid'])


def _resource_conditions(ctx, resources):
    # Imported here: these modules build on this one.
    from services.placement.objects import inventory as inv_obj
    from services.placement.objects import usage as usage_obj
    conditions = []
    for name, amount in sorted(resources.items()):
        rc_id = catalog.RESOURCE_CLASSES.id_for(ctx, name)
        used = usage_obj.used_sql(_INV.c.resource_provider_id, rc_id)
        conditions.append(_RP.c.id.in_(
            sa.select(_INV.c.resource_provider_id)
            .where(_INV.c.resource_class_id == rc_id)
            .where(inv_obj.fits_sql(amount, sa.func.coalesce(used, 0)))))
    return conditions


@placement_db.reader
def list_providers(ctx, name=None, uuid=None, in_tree=None, resources=None,
                   required=None, member_of=None):
    """Providers matching every given filter, in one SQL statement.

    :param name: exact name.
    :param uuid: normalised uuid.
    :param in_tree: a provider uuid: list every provider of its tree.
    :param resources: {class name: amount}: providers with the capacity
        (and unit rules) to satisfy each amount on their own.
    :param required: a :class:`query.RequiredTraits` on the provider's
        own traits.
    :param member_of: a :class:`query.MemberOf` on the provider's own
        aggregates.
    :returns: a list of provider dicts ordered by id.
    """
    query = _provider_select()
    if name is not None:
        query = query.where(_RP.c.name == name)
    if uuid is not None:
        query = query.where(_RP.c.uuid == uuid)
    if in_tree is not None:
        # NOTE: an unknown provider yields a NULL root and so no rows.
        query = query.where(_RP.c.root_provider_id == sa.select(
            _RP.c.root_provider_id).where(_RP.c.uuid == in_tree)
            .scalar_subquery())
    # Imported here: these modules build on this one.
    from services.placement.objects import aggregate as agg_obj
    from services.placement.objects import trait as trait_obj
    conditions = []
    if resources:
        conditions += _resource_conditions(ctx, resources)
    if required is not None:
        conditions += trait_obj.required_traits_clauses(ctx, _RP.c.id,
                                                        required)
    if member_of is not None:
        conditions += agg_obj.member_of_clauses(_RP.c.id, member_of)
    if conditions:
        query = query.where(*conditions)
    rows = ctx.session.execute(query.order_by(_RP.c.id)).mappings()
    return [dict(row) for row in rows]
