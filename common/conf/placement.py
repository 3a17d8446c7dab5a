# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[placement]`` group used by the placement service.

Later the same group also carries the options of the placement *client*
(the scheduler and compute agents), as in a Nova deployment.
"""

from oslo_config import cfg

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
]


def register_opts(conf):
    """Register the [placement] options."""
    conf.register_group(placement_group)
    conf.register_opts(placement_opts, group=placement_group)


def list_opts():
    """Options for the sample config."""
    return [(placement_group, placement_opts)]
