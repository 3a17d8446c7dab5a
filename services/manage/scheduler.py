# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage scheduler explain``: where would a server go, and why?

(``scheduler why``, why a server *is* where it is, is in scheduler_why.)

    scheduler explain --flavor F [--image ID|NAME] [--image-property K=V ...]
                      [--availability-zone AZ[:HOST[:NODE]]]
                      [--hint K=V ...] [--num-instances N]
                      [--project-id P] [--json] [--via-scheduler]

A dry run of the scheduling pipeline, built in this process from the
configuration (services.scheduler.offline): the same request filters,
placement query, filters and weighers as a boot, but nothing is claimed.
It needs the databases and placement, not a running scheduler, so it
answers against an all-in-one (``--config-file <state>/berth.conf``).
``--via-scheduler`` asks a running scheduler instead (its ``explain``
RPC), giving up after ``--timeout`` seconds. The flavor is read from the
api database (by id or name); the image's properties come from the image
catalog (``--image``, an id or a name) and/or the command line. Prints,
for each stage, how many hosts went in and out and why, then the best
hosts with each weigher's share. Exit code 0 when the request would be
placed, 1 when not (the summary says why), 2 when the cloud cannot be
reached (one line says which part), 127 for invalid input.
"""

import json
import logging
import threading

import sqlalchemy as sa

from common import context
from common.db import api_tables
from common.db import cell_access as cell_access_mod
from common.db import cells
from common.db import group_setup
from common.numa import constraints
from common.numa import exception as numa_exc
from common.objects import flavor as flavor_obj
from common.objects import image as image_obj
from common.objects import request_spec as spec_obj
from common import rpc

LOG = logging.getLogger(__name__)


def _api(conf):
    """The api Database (a function, so that tests can give their own)."""
    return cells.configure_api(conf)


#: Seconds ``--via-scheduler`` waits for a scheduler by default.
RPC_TIMEOUT = 5
#: Exit code when the cloud (databases, placement, scheduler) is
#: unreachable.
UNREACHABLE = 2


def _scheduler():
    """The scheduler client; RPC is initialized around the call."""
    from services.scheduler import rpcapi as scheduler_rpcapi
    return scheduler_rpcapi.SchedulerAPI()


def _offline(conf):
    """The pipeline built in this process (a function, for tests)."""
    from services.scheduler import offline
    return offline.build(conf)


def reachable(conf, placement_timeout=None):
    """Probe the databases and placement, and keep later waits short
    (services.scheduler.offline); a function, for tests.

    :param placement_timeout: seconds a placement call may take; the
        offline default when None.
    :raises Unreachable: with the one line to print.
    """
    from services.scheduler import offline
    try:
        offline.check_reachable(conf)
    except offline.Unreachable as exc:
        raise Unreachable(str(exc))
    offline.fail_fast(conf, placement_timeout or offline.PLACEMENT_TIMEOUT)


class Unreachable(Exception):
    """The cloud cannot be reached; the message is the one line."""


class InvalidInput(Exception):
    """A bad flavor, image, zone or hint; the message says which."""


def _flavor(ctx, ref):
    t = api_tables
    row = ctx.session.execute(sa.select(t.flavors).where(sa.or_(
        t.flavors.c.flavorid == ref, t.flavors.c.name == ref)).order_by(
        (t.flavors.c.flavorid != ref), t.flavors.c.id)).first()
    if row is None:
        return None
    specs = {r.key: r.value for r in ctx.session.execute(sa.select(
        t.flavor_extra_specs.c.key, t.flavor_extra_specs.c.value).where(
        t.flavor_extra_specs.c.flavor_id == row.id))}
    return flavor_obj.Flavor(
        name=row.name, flavorid=row.flavorid, vcpus=row.vcpus,
        memory_mb=row.memory_mb, root_gb=row.root_gb,
        ephemeral_gb=row.ephemeral_gb, swap=row.swap, extra_specs=specs,
        is_public=bool(row.is_public))


def _pairs(values, what):
    result = {}
    for item in values or ():
        if '=' not in item:
            raise InvalidInput('%s must be KEY=VALUE, not %r' % (what, item))
        key, value = item.split('=', 1)
        result.setdefault(key, []).append(value)
    return result


def _image(ctxt, conf, ref, properties):
    props = {}
    name = ''
    image_id = ref
    if ref:
        try:
            # NOTE: the API's image lookup (Glance or the built-in
            # catalog), so that explain sees what a boot would.
            from services.api import images as image_api
            image = image_api.find_image(ctxt, conf, ref)
        except ImportError:
            raise InvalidInput('no image catalog in this installation; '
                               'use --image-property')
        except Exception as exc:
            raise InvalidInput('image %s: %s' % (ref, exc))
        props.update(getattr(image, 'properties', {}) or {})
        name = getattr(image, 'name', '') or ''
        image_id = image.id
    props.update({k: v[-1] for k, v in properties.items()})
    return image_obj.ImageMeta(id=image_id, name=name, properties=props)


def _zone(value):
    """(zone, [forced host], [forced node]) of ``az[:host[:node]]``."""
    if not value:
        return None, [], []
    parts = value.split(':')
    if len(parts) > 3:
        raise InvalidInput('Unable to parse availability zone %r' % value)
    parts += [None] * (3 - len(parts))
    zone, host, node = (p or None for p in parts)
    return zone, [host] if host else [], [node] if node else []


def build_spec(conf, args):
    """The RequestSpec a boot with these arguments would send.

    :raises InvalidInput: with the reason.
    """
    ctxt = context.get_admin_context()
    api = _api(conf)
    flavor = api.reader(_flavor)(ctxt, args.flavor)
    if flavor is None:
        raise InvalidInput('Flavor %s could not be found.' % args.flavor)
    image = _image(ctxt, conf, args.image,
                   _pairs(args.image_property, '--image-property'))
    try:
        topology = constraints.get_constraints(flavor, image.properties)
    except numa_exc.NUMARequestInvalid as exc:
        raise InvalidInput(str(exc))
    zone, hosts, nodes = _zone(args.availability_zone)
    spec = spec_obj.RequestSpec(
        project_id=args.project_id, user_id=None, flavor=flavor,
        image=image, availability_zone=zone,
        num_instances=args.num_instances,
        scheduler_hints=_pairs(args.hint, '--hint'), force_hosts=hosts,
        force_nodes=nodes,
        numa_topology=None if topology is None else topology.to_primitive())
    try:
        group_setup.setup_instance_group(
            ctxt, cell_access_mod.CellAccess(api), spec)
    except Exception as exc:
        raise InvalidInput(str(exc))
    return spec


def render(spec, explanation):
    """The human-readable explanation, as a list of lines."""
    flavor = spec.flavor
    lines = ['Request: flavor %s (%d vCPU, %d MiB RAM, %d GiB disk), '
             'zone %s, %d instance(s)' % (
                 flavor.name, flavor.vcpus, flavor.memory_mb,
                 spec.disk_gb, spec.availability_zone or '-',
                 spec.num_instances)]
    if explanation.get('placement_query') is not None:
        lines.append('Placement query: %s' % explanation['placement_query'])
        lines.append('Candidates from placement: %d, hosts: %d' % (
            explanation.get('candidates', 0), explanation.get('hosts', 0)))
    for item in explanation.get('filters', []):
        removed = ', '.join(':'.join(k) for k in item['removed'][:10])
        more = len(item['removed']) - 10
        lines.append('Filter %s: %d -> %d%s' % (
            item['filter'], item['hosts_in'], item['hosts_out'],
            ' (removed %s%s)' % (removed, ' and %d more' % more
                                 if more > 0 else '') if removed else ''))
    for key, item in sorted(explanation.get('rejections', {}).items()):
        lines.append('  %s: %s: %s' % (key, item['filter'], item['reason']))
    if explanation.get('weighed'):
        lines.append('Best hosts:')
        for rank, item in enumerate(explanation['weighed'], 1):
            shares = ', '.join('%s %s' % pair for pair in
                               sorted(item['weighers'].items()))
            lines.append('  %d. %s (%s) weight %s [%s]' % (
                rank, item['host'], item['node'], item['weight'], shares))
    for note in explanation.get('notes', []):
        lines.append('Note: %s' % note)
    if explanation.get('selected'):
        lines.append('Would select: %s' % ', '.join(
            '%s (%s)' % tuple(pair) for pair in explanation['selected']))
    else:
        lines.append('No valid host: %s' % explanation.get('summary'))
    return lines


def _via_scheduler(conf, spec, timeout):
    """The running schedulers' explanation, or Unreachable within about
    ``timeout`` seconds (a transport that cannot connect may block
    longer than the call's own timeout: the call runs in a thread).
    """
    started = not rpc.initialized()
    if started:
        rpc.init(conf)
    answer = {}

    def call():
        try:
            answer['result'] = _scheduler().explain(
                context.get_admin_context(), spec, timeout=timeout)
        except Exception as exc:
            answer['error'] = exc

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(timeout + 2)
    if worker.is_alive() or 'error' in answer:
        # NOTE: no rpc.cleanup() here: it would wait for the stuck call.
        error = answer.get('error')
        raise Unreachable('no scheduler answered within %ss%s' % (
            timeout, ': %s' % type(error).__name__ if error else ''))
    if started:
        rpc.cleanup()
    return answer['result']


def _explanation(conf, args, spec):
    """The explanation, offline or from a scheduler.

    :raises Unreachable: with the one line to print.
    """
    if args.via_scheduler:
        return _via_scheduler(conf, spec, args.timeout)
    from services.scheduler import offline
    try:
        scheduler = _offline(conf)
        return offline.explain(scheduler, context.get_admin_context(), spec)
    except offline.Unreachable as exc:
        raise Unreachable(str(exc))
    except Exception as exc:
        # NOTE: a database or placement that fails mid-way (the probe
        # passed): one line, not a traceback.
        LOG.debug('Dry run failed', exc_info=True)
        raise Unreachable('the dry run failed: %s' % (
            str(exc).splitlines()[0] if str(exc) else type(exc).__name__))


def explain(conf):
    """The command; see the module docstring."""
    args = conf.category
    if args.num_instances < 1:
        print('--num-instances must be at least 1.')
        return 127
    try:
        reachable(conf)
        spec = build_spec(conf, args)
    except InvalidInput as exc:
        print(str(exc))
        return 127
    except Unreachable as exc:
        print(str(exc))
        return UNREACHABLE
    except Exception as exc:
        print('Cannot read the request: %s' % (
            str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
        return UNREACHABLE
    try:
        explanation = _explanation(conf, args, spec)
    except Unreachable as exc:
        print(str(exc))
        return UNREACHABLE
    if args.json:
        print(json.dumps(explanation, indent=2, sort_keys=True))
    else:
        print('\n'.join(render(spec, explanation)))
    return 0 if explanation.get('selected') else 1


def add_parsers(subparsers):
    """Add ``scheduler`` and its commands to berth-manage's parser."""
    parser = subparsers.add_parser('scheduler', help='Scheduler commands.')
    commands = parser.add_subparsers(dest='scheduler_command',
                                     metavar='<command>')
    commands.required = True
    cmd = commands.add_parser(
        'explain', help='Dry run: where would this request go, and why.')
    cmd.add_argument('--flavor', required=True, help='Flavor id or name.')
    cmd.add_argument('--image', help='Image id or name (its properties '
                                     'count).')
    cmd.add_argument('--image-property', dest='image_property',
                     action='append', metavar='KEY=VALUE',
                     help='An image property (repeatable).')
    cmd.add_argument('--availability-zone', dest='availability_zone',
                     metavar='AZ[:HOST[:NODE]]')
    cmd.add_argument('--hint', action='append', metavar='KEY=VALUE',
                     help='A scheduler hint (repeatable), e.g. '
                          'group=<uuid>, different_host=<uuid>.')
    cmd.add_argument('--num-instances', dest='num_instances', type=int,
                     default=1)
    cmd.add_argument('--project-id', dest='project_id', default='admin')
    cmd.add_argument('--json', action='store_true',
                     help='Print the explanation as JSON.')
    cmd.add_argument('--via-scheduler', dest='via_scheduler',
                     action='store_true',
                     help='Ask a running scheduler over RPC instead of '
                          'running the pipeline in this process.')
    cmd.add_argument('--timeout', type=int, default=RPC_TIMEOUT,
                     help='Seconds --via-scheduler waits (default %d).'
                          % RPC_TIMEOUT)
    cmd.set_defaults(action_fn=explain)
    from services.manage import scheduler_why
    scheduler_why.add_parser(commands)
