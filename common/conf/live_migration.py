# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Live migration options of ``[DEFAULT]`` (Nova keeps them there).

Read by the conductor's live migration flow
(services/conductor/live_migrate_flow.py), its bound for migrations
never started (services/conductor/unstarted_live_migrations.py) and the
compute agent's queue of outgoing live migrations
(services/compute/live_migration_queue.py).
"""

from oslo_config import cfg

live_migration_opts = [
    cfg.IntOpt('migrate_max_retries', default=-1, min=-1, help="""
How many other destinations the conductor tries when the pre-checks of the
one the scheduler chose for a live migration fail (the destination's
claim of NUMA cells and pinned CPUs, the driver's checks).

Possible values:

* -1 (the default): try every host the scheduler offers, as Nova does;
* 0: only the first destination;
* a positive number: that many retries after the first.

Related options:

* ``long_rpc_timeout``: how long each pre-check may take.
"""),
    cfg.IntOpt('max_concurrent_live_migrations', default=1, min=0,
               help="""
How many live migrations each compute host runs at once as their source;
the others wait, ``queued``, in arrival order (and can be aborted there,
microversion 2.65). As in Nova.

Possible values:

* 0: no limit per host (a process simulating many hosts still runs at
  most 64 at once);
* a positive number (the default, 1).
"""),
    cfg.IntOpt('live_migration_start_timeout', default=3600, min=0,
               help="""
Seconds after which a live migration a conductor never handed to its
source compute is ended (that conductor stopped while it chose and
checked the destination): the migration goes to ``error``, the server
keeps its host with no task and gets a fault, and the allocations the
migration held go back to it. A server left ``migrating`` that long with
no live migration under way loses its task too.

Berth-specific (Nova has no such bound). Every conductor checks every
``live_migration_start_timeout`` seconds, at most every 60 seconds.

Possible values:

* 0: never end them;
* a positive number of seconds, longer than the conductor's checks can
  take.

Related options:

* ``long_rpc_timeout``: each pre-check of a destination waits up to it.
* ``migrate_max_retries``: how many destinations are checked.
"""),
]


def register_opts(conf):
    """Register the live migration options in [DEFAULT]."""
    conf.register_opts(live_migration_opts)


def list_opts():
    """Options for the sample config."""
    return [('DEFAULT', live_migration_opts)]
