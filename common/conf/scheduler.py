# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[scheduler]`` group: the scheduling service."""

from oslo_config import cfg

scheduler_group = cfg.OptGroup(
    'scheduler', title='Scheduler options',
    help='The berth-scheduler service and its placement query.')

scheduler_opts = [
    cfg.IntOpt('workers', min=1, help="""
Scheduler worker processes. Defaults to the number of CPUs. Schedulers are
active-active: placement claims make concurrent workers safe.
"""),
    cfg.IntOpt('max_attempts', default=3, min=1, help="""
How many hosts a build may try: the selected host plus max_attempts - 1
alternates, used by the conductor when a build fails on a compute.
"""),
    cfg.IntOpt('max_placement_results', default=1000, min=1, help="""
The limit on allocation candidates asked of placement per request. Lower
values make scheduling faster on large clouds; too low and good hosts may
be left out.
"""),
    cfg.BoolOpt('share_placement_queries', default=True, help="""
A request whose allocation candidates query is the same as one already
sent by this worker (a burst of one flavor) waits for that answer instead
of sending its own, and takes a finished answer younger than
placement_answer_max_age. The claim in placement still decides.

Related options:

* placement_answer_max_age
"""),
    cfg.FloatOpt('placement_answer_max_age', default=1.0, min=0.0, help="""
Seconds a finished allocation candidates answer is handed to this worker's
later requests with the same query, with the worker's own selections since
applied on top. Claims by other workers in that time are not seen until
the claim (placement refuses an overcommitting one and the next host is
tried); capacity freed or added in that time is not seen either, so a
request that finds no host in a shared answer asks placement again before
it fails.

Possible values:

* 0: share only queries in flight; every answer is used once.
* a positive number: in a burst of one flavor, placement is asked about
  once per this many seconds per worker.

Related options:

* share_placement_queries: False turns all sharing off.
"""),
    cfg.IntOpt('discover_hosts_in_cells_interval', default=-1, min=-1,
               help="""
Seconds between automatic discovery of new compute hosts; -1 disables it.
"""),
    cfg.BoolOpt('limit_tenants_to_placement_aggregate', default=False,
                help="""
Send a project's requests only to aggregates whose metadata names it
(filter_tenant_id*), through placement member_of.
"""),
    cfg.BoolOpt('placement_aggregate_required_for_tenants', default=False,
                help="""
With limit_tenants_to_placement_aggregate, refuse projects that no
aggregate names instead of letting them go anywhere.
"""),
    cfg.BoolOpt('query_placement_for_availability_zone', default=True,
                help="""
Turn a requested availability zone into a placement member_of on the
zone's aggregates, so that AvailabilityZoneFilter is not needed.
"""),
    cfg.BoolOpt('query_placement_for_image_type_support', default=False,
                help="""
Ask placement only for compute nodes with the COMPUTE_IMAGE_TYPE_* trait of
the image's disk format.
"""),
    cfg.BoolOpt('enable_isolated_aggregate_filtering', default=False,
                help="""
Keep requests away from aggregates whose trait:*=required metadata the
flavor and image do not ask for.
"""),
    cfg.BoolOpt('image_metadata_prefilter', default=False, help="""
Turn image properties (hw_architecture, hw_vm_mode...) into required
placement traits.
"""),
]


def register_opts(conf):
    """Register the [scheduler] options."""
    conf.register_group(scheduler_group)
    conf.register_opts(scheduler_opts, group=scheduler_group)


def list_opts():
    """Options for the sample config."""
    return [(scheduler_group, scheduler_opts)]
