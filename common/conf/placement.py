# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[placement]`` group: the service and its clients.

The placement service reads the behaviour options below. The scheduler,
conductor and compute agents read keystoneauth's session, auth and adapter
options from the same group to reach placement, as in a Nova deployment
(``auth_type``, ``endpoint_override``, ``timeout``, ``valid_interfaces``...).
"""

from oslo_config import cfg

from common.conf import _ksa

DEFAULT_SERVICE_TYPE = 'placement'
PLACEMENT_CONNECT_RETRIES = 5

placement_group = cfg.OptGroup(
    'placement', title='Placement options',
    help='Behaviour of the placement service.')

placement_opts = [
    cfg.BoolOpt(
        'randomize_allocation_candidates',
        default=False,
        help="""
Shuffle allocation candidates before applying the ``limit`` query parameter.

When False, the candidates are returned in a stable order (by provider id),
so with a limit the same providers are returned every time. Set it to True
when several schedulers race for the same few providers.
"""),
    cfg.BoolOpt(
        'provider_cache',
        default=True,
        help="""
Answer allocation candidate requests on a flat cloud from an in-memory
copy of every provider's inventory, usage and traits.

Each request still reads one small row per provider (its generation and
usage serial) and reads again only the providers that changed, in the same
transaction, so answers are as fresh as without the copy; a thousand
providers cost a fraction of reading them all. Changes made directly in the
database, bypassing the API, are seen only once the provider changes again
or the service restarts: turn this off when such edits are expected, and
while placement workers of an older release (which do not record deleted
allocations in ``usage_serial``) share the database during an upgrade.
Clouds with nested or sharing providers use the database for those
requests either way.
"""),
    cfg.StrOpt(
        'incomplete_consumer_project_id',
        default='00000000-0000-0000-0000-000000000000',
        help="""
Project id recorded for consumers written by microversions older than 1.8,
which did not send one.
"""),
    cfg.StrOpt(
        'incomplete_consumer_user_id',
        default='00000000-0000-0000-0000-000000000000',
        help="""
User id recorded for consumers written by microversions older than 1.8,
which did not send one.
"""),
    cfg.IntOpt(
        'allocation_conflict_retry_count',
        default=10,
        min=0,
        help="""
How many times a write of allocations is retried when a provider it uses
was changed by a concurrent request.

Allocation writes do not name provider generations, so such a conflict is
only a race between two claims on the same provider: retrying sees the
other claim and either fits or fails on capacity. Many schedulers claiming
on a few providers need retries; 0 answers the race with a 409.
"""),
    cfg.IntOpt(
        'max_allocation_candidates',
        default=-1,
        min=-1,
        help="""
The largest number of allocation candidates generated for one request.

Nested providers make the number of candidates grow as a product of the
choices for every request group; this cap bounds the time and memory one
request may take. -1 means no cap other than the request's own ``limit``.

Related options:

* allocation_candidates_generation_strategy
"""),
    cfg.StrOpt(
        'allocation_candidates_generation_strategy',
        default='breadth-first',
        choices=[
            ('depth-first', 'Exhaust the combinations of the first root '
                            'provider before moving to the next.'),
            ('breadth-first', 'Take one candidate from every root provider '
                              'before taking a second from any.'),
        ],
        help="""
The order in which candidates are generated when a cap applies.

With breadth-first, a capped answer still spreads over as many root
providers (hosts) as possible, which is what a scheduler wants.

Related options:

* max_allocation_candidates
"""),
    cfg.BoolOpt(
        'direct_http',
        default=True,
        help="""
Clients only (scheduler, conductor, compute agents, API): send placement
requests over the service's own keep-alive HTTP connections.

The endpoint, token and TLS settings still come from the keystoneauth
options of this group, and a request that cannot be sent that way (placement
unreachable, a rejected token) goes through keystoneauth, with its retries
and re-authentication. What is skipped is keystoneauth's and requests'
per-call processing, about a millisecond of CPU per call. Turn this off to
see keystoneauth's request logging; a proxy named in the environment or a
.netrc file turns it off by itself.
"""),
]


def register_opts(conf):
    """Register the [placement] options, the client ones included."""
    conf.register_group(placement_group)
    conf.register_opts(placement_opts, group=placement_group)
    _ksa.register_client_opts(conf, placement_group, DEFAULT_SERVICE_TYPE)
    # NOTE: keystoneauth retries no refused connection by default, so a
    # placement restart would fail every claim and report made meanwhile.
    # Five retries back off 0.5 + 1 + 2 + 4 + 8 s: a restart under load
    # took longer than the 7.5 s of four (a boot failed in the restart
    # test), and 15.5 s still gives up soon when placement is really down.
    conf.set_default('connect_retries', PLACEMENT_CONNECT_RETRIES,
                     group=placement_group.name)


def list_opts():
    """Options for the sample config."""
    return [(placement_group, placement_opts + _ksa.client_opts())]
