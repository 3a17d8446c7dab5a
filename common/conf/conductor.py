# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[conductor]`` group: the berth-conductor service."""

from oslo_config import cfg

conductor_group = cfg.OptGroup(
    'conductor', title='Conductor options',
    help="""
The berth-conductor service: it turns build requests into instances on
the hosts the scheduler chose, reschedules failed builds onto their
alternates, and keeps the database records of the compute agents, which
have no database access of their own.
""")

conductor_opts = [
    cfg.IntOpt('workers', min=1, help="""
Conductor worker processes. Defaults to the number of CPUs.

Conductors are active-active: every worker consumes the shared
``conductor`` topic, and nothing a build does is held in one worker's
memory between two messages.
"""),
    cfg.IntOpt('schedule_timeout', min=1, help="""
Seconds the conductor waits for the scheduler to answer
``select_destinations`` before it gives up on the request (the instances
then go to ERROR in cell0).

Possible values:

* Unset (the default): ``[DEFAULT] long_rpc_timeout``. The call uses
  ``call_monitor_timeout`` either way, so a scheduler that died is still
  noticed within ``rpc_response_timeout``.

Related options:

* ``[DEFAULT] long_rpc_timeout``, ``[DEFAULT] rpc_response_timeout``.
"""),
    cfg.IntOpt('build_request_timeout', default=3600, min=0, help="""
Seconds after which a build that never reached a compute agent is ended:
a build request still unscheduled that long after the API wrote it (the
conductor that took it stopped, or its cast was lost) is written to cell0
in ERROR with a fault saying so, and an instance left without a host by a
reschedule that was never cast on, unchanged that long, goes to ERROR.
Both lose what they held in placement.

Berth-specific (Nova has no such bound). Every conductor checks every
``build_request_timeout`` seconds, at most every 60 seconds (its periodic
tasks run after ``[DEFAULT] periodic_fuzzy_delay``).

Possible values:

* 0: never end such builds (they stay in ``BUILD`` until deleted).
* A positive number of seconds, longer than a build can legitimately
  wait for the scheduler and in the conductor's queue: a build still
  under way is ended too (its conductor then cleans up after it).

Related options:

* ``schedule_timeout``: how long a conductor waits for the scheduler;
  keep this bound well above it.
* ``[compute] instance_build_timeout``: the bound for builds that reached
  a compute agent.
"""),
    cfg.IntOpt('move_timeout', default=3600, min=0, help="""
Seconds after which a server move (resize, cold or live migration,
evacuation) that made no progress is ended: its migration, in progress
but unchanged that long, goes to ``error``; a server still on its source
gets its source allocation back (what it held on the destination is
dropped), one already on its destination keeps that one; either way its
task state is cleared and a fault says why. A server left in
``VERIFY_RESIZE`` by a confirm its source never answered takes the state
it was resized from; one left there by a revert lost half-way goes to
``ERROR``. A server still in the task
the API gave its resize, migration or unshelve (``resize_prep``,
``unshelving``) that long, with no migration in progress (its conductor
stopped before the move was under way), gets its task cleared and a
fault too.

Berth-specific (Nova leaves such a server in its task state until an
admin resets it). Every conductor checks every ``move_timeout`` seconds,
at most every 60 seconds. A resize waiting for its confirmation
(``VERIFY_RESIZE``) is not stuck (unless its server was deleted), nor is
a live migration whose progress keeps being reported.

Possible values:

* 0: never end such moves.
* A positive number of seconds, longer than any move may legitimately
  take between two steps (a large live migration reports its progress
  all along).
"""),
]


def register_opts(conf):
    """Register the [conductor] options."""
    conf.register_group(conductor_group)
    conf.register_opts(conductor_opts, group=conductor_group)


def list_opts():
    """Options for the sample config."""
    return [(conductor_group, conductor_opts)]
