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
]


def register_opts(conf):
    """Register the [conductor] options."""
    conf.register_group(conductor_group)
    conf.register_opts(conductor_opts, group=conductor_group)


def list_opts():
    """Options for the sample config."""
    return [(conductor_group, conductor_opts)]
