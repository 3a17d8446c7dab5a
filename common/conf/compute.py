# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[compute]`` group: the berth-compute agent.

Names and meanings follow Nova's ``[compute]`` group where Nova has the
option (``compute_driver`` lives in ``[DEFAULT]`` there; Berth keeps every
agent option in one group). Options Nova does not have say so.
"""

from oslo_config import cfg

compute_group = cfg.OptGroup(
    'compute', title='Compute agent options',
    help='The berth-compute agent: virt driver, CPU sets, placement '
         'reporting and builds.')

compute_opts = [
    cfg.StrOpt('compute_driver', default='fake', help="""
The virt driver, by its name in the ``berth.compute.drivers`` entry points.

Possible values:

* ``fake``: simulated hosts described by ``[fake_driver]``; one process can
  stand in for hundreds of hosts.
* ``local``: this machine (CPUs from sysfs, memory from /proc/meminfo,
  disk from ``instances_path``); instances are tracked records.

An unknown name stops the agent at start.
"""),
    cfg.StrOpt('cpu_dedicated_set', help="""
Host CPUs for pinned (dedicated) guest vCPUs, reported to placement as
``PCPU``.

Possible values:

* A CPU list such as ``4-12,^8,15``.
* Unset: no PCPU inventory, and every usable CPU is shared (unless the
  legacy ``vcpu_pin_set`` says otherwise).

Related options:

* ``cpu_shared_set``: must not overlap with this set.
"""),
    cfg.StrOpt('cpu_shared_set', help="""
Host CPUs for unpinned (shared) guest vCPUs, reported to placement as
``VCPU``.

Possible values:

* A CPU list such as ``0-3``.
* Unset: every online CPU outside ``cpu_dedicated_set``.

Related options:

* ``cpu_dedicated_set``: must not overlap with this set.
"""),
    cfg.StrOpt('vcpu_pin_set', deprecated_group='DEFAULT', help="""
Legacy CPU set (Nova's ``[DEFAULT] vcpu_pin_set``): CPUs guests may use,
pinned or not. Ignored when ``cpu_dedicated_set`` or ``cpu_shared_set``
is set.

In this layout pinned and floating guests share the same CPUs, and no
PCPU inventory is reported; pinned guests still take whole CPUs on the
host NUMA topology the scheduler reads.
"""),
    cfg.IntOpt('resource_provider_association_refresh', default=300, min=0,
               help="""
Seconds after which the agent re-reads its providers from placement and
re-saves its compute node records even when nothing seems to have changed.

Between refreshes an unchanged node costs no placement write and no record
save; one read of provider generations per update still catches manual
edits in placement. 0 refreshes on every update.
"""),
    cfg.BoolOpt('numa_nodes_in_placement', default=False, help="""
Report each host NUMA node as a child resource provider holding the node's
``VCPU``, ``PCPU`` and ``MEMORY_MB`` (with the ``HW_NUMA_ROOT`` trait); the
compute node provider then holds only ``DISK_GB``.

Berth-specific (Nova has no released equivalent). Off: the compute node
provider holds everything, as Nova reports it.
"""),
    cfg.IntOpt('orphan_allocation_grace_period', default=300, min=0,
               help="""
Seconds an allocation against one of this agent's providers may belong to
a consumer that is no instance at all before the agent deletes it.

Allocations of deleted instances are removed at once. A consumer the
conductor does not know may be a build the scheduler has just claimed for
and the conductor has not recorded yet, so it gets this long. 0 deletes
such allocations on first sight.
"""),
    cfg.BoolOpt('replace_stale_resource_provider', default=False, help="""
What to do when placement already has a provider with this node's name but
another uuid (the node's record was deleted and recreated, or the host was
renamed back).

False (as Nova): log ``ResourceProviderCreationFailed`` every update until
an operator deletes the stale provider (or gives it the node's uuid). True
(Berth-specific): delete the stale provider tree when nothing is allocated
against it, then create the node's own; one with allocations is left alone.
"""),
    cfg.IntOpt('max_concurrent_builds', default=10, min=0, help="""
How many builds one agent runs at the same time; more wait. 0 means no
limit.
"""),
    cfg.IntOpt('resource_update_workers', default=8, min=1, help="""
Threads one agent uses to update its nodes in a periodic resource update:
an agent simulating many hosts updates that many at once.
"""),
    cfg.IntOpt('restart_build_grace', default=60, min=0, help="""
Seconds a restarted agent waits for the build casts of its hosts that
arrived while it was down before it sets the builds that never came to
ERROR with a fault.

At start the agent ends the builds its previous process dropped: those
that were spawning at once, and those still in task ``scheduling`` (taken
and dropped before their spawn, or cast while it was down and still
queued) unless their cast arrives within this time.

Berth-specific. Possible values:

* 0: end them all at start, queued casts included, as Nova does.
* A positive number of seconds: long enough for the queued casts to be
  taken once the agent consumes again.

Related options:

* ``instance_build_timeout``: the bound for any build of the agent.
"""),
    cfg.IntOpt('instance_build_timeout', default=0, min=0, help="""
Seconds an instance of this agent's hosts may stay building (``BUILD``)
after it was created before the agent sets it to ERROR with a fault.

A build whose cast was lost, or whose agent stopped without a restart
ending it, would otherwise stay in ``BUILD`` holding its allocation. The
agent checks every ``instance_build_timeout`` seconds, at most every 60
seconds (each check syncs each host's instance list with the conductor,
as a resource update does); the instance keeps its host and allocation
until it is deleted, as any instance in ERROR does.

Possible values:

* 0 (the default, as Nova): no timeout.
* A positive number of seconds: longer than the slowest normal build,
  including the time builds wait for ``max_concurrent_builds``.

Related options:

* ``max_concurrent_builds``: builds waiting for a slot age too.
* ``[conductor] build_request_timeout``: the bound for builds that never
  reached a compute agent.
"""),
    cfg.FloatOpt('record_save_delay', default=0.2, min=0.0, help="""
Seconds an agent collects record changes before it sends them to the
conductor, all in one call: the compute node records that builds and
deletes changed, and the builds' instance updates (spawning, active).

Every build changes its node's usage and updates its instance twice.
Sending each change at once costs a conductor call and a database
transaction per change; an agent simulating many hosts, or one host
taking a burst, sends a batch instead. The node records (what
``os-hypervisors`` shows) lag by this much, and each build waits up to
this much for each of its two instance updates (a build of a real guest
takes far longer). Scheduling does not read usage from the records.

The writes of the moves' steps (resize, cold and live migration) are
batched too, but never held for this delay: a write goes at once, and
writes join one call only while the agent's previous calls keep the
conductor busy (a host's queue of live migrations runs one after another
and must not wait).

Possible values:

* 0: send each change at once, in its own call.
* A positive number of seconds.
"""),
]


def register_opts(conf):
    """Register the [compute] options."""
    conf.register_group(compute_group)
    conf.register_opts(compute_opts, group=compute_group)


def list_opts():
    """Options for the sample config."""
    return [(compute_group, compute_opts)]
