# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[audit]`` group: the conductor's allocation auditor."""

from oslo_config import cfg

audit_group = cfg.OptGroup(
    'audit', title='Allocation audit options',
    help="""
The conductor's periodic comparison of placement allocations with the
instances of every cell: allocations whose consumer is no live instance
or build request (orphaned), live instances on a host without an
allocation (missing), and allocations that do not match the instance's
flavor (mismatched). ``berth-manage placement audit`` and
``heal_allocations`` run the same checks on demand.
""")

audit_opts = [
    cfg.IntOpt('allocation_audit_interval', default=3600, min=-1, help="""
Seconds between two runs of the allocation auditor; -1 disables it.

Each run reads every compute node provider's allocations from placement
(one request per provider) and the live instances of every cell.
"""),
    cfg.BoolOpt('allocation_audit_repair', default=False, help="""
Repair what the auditor finds instead of only reporting it: delete
orphaned allocations, create missing ones from the instance's flavor on
its compute node, and rewrite mismatched ones.

Related options:

* ``allocation_audit_grace_period``: instances that changed more recently
  are never repaired.
"""),
    cfg.IntOpt('allocation_audit_grace_period', default=300, min=0, help="""
Seconds after its last change during which an instance is left out of the
missing and mismatched checks, so that a build, a reschedule or a delete
in progress (which moves allocations itself) is not taken for a leak.
Instances with a task in progress are always left out.
"""),
]


def register_opts(conf):
    """Register the [audit] options."""
    conf.register_group(audit_group)
    conf.register_opts(audit_opts, group=audit_group)


def list_opts():
    """Options for the sample config."""
    return [(audit_group, audit_opts)]
