# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Resource tracker options in ``[DEFAULT]``, named as Nova names them.

What a compute agent holds back for its host (reserved CPUs, memory and
disk), how far it lets placement overcommit (the allocation ratios) and
how often it reconciles its view with the records and placement.
"""

from oslo_config import cfg


def _ratio(name, resource, initial_name):
    return cfg.FloatOpt(name, min=0.0, help="""
Overcommit ratio of %(resource)s, reported as the ``allocation_ratio`` of
its placement inventory.

Possible values:

* Unset (the default): ``%(initial)s`` on a new compute node; after that
  the agent keeps whatever ratio placement holds, so that an operator may
  set it through the placement API.
* A positive float: always reported, overwriting edits in placement.

Related options:

* ``%(initial)s``
""" % {'resource': resource, 'initial': initial_name})


def _initial_ratio(name, resource, default, changed=''):
    return cfg.FloatOpt(name, default=default, min=0.0, help="""
Overcommit ratio of %(resource)s for a compute node reported for the first
time while the matching ``*_allocation_ratio`` option is unset.
%(changed)s""" % {'resource': resource, 'changed': changed})


# NOTE: Berth follows Nova 34 (doc/configuration.md); a node reported
# before the change keeps the ratio placement holds, only new nodes and
# nodes whose operator set nothing at all see the new default.
_CHANGED = """
Berth follows Nova 34: the default was %s before and is %s now. Nodes
already in placement keep the ratio placement holds; set this option to
the old value to keep new nodes as they were.
"""


resource_tracker_opts = [
    cfg.IntOpt('update_resources_interval', default=0, help="""
Seconds between two periodic resource updates of a compute agent.

Possible values:

* 0: the default interval, 60 seconds.
* A positive number of seconds.
* A negative number: no periodic update (only the one at start); only for
  debugging, as the agent then stops repairing its records and placement.
"""),
    cfg.IntOpt('reserved_host_cpus', default=0, min=0, help="""
Host CPUs held back for the host, reported as the ``reserved`` amount of
the ``VCPU`` inventory.
"""),
    cfg.IntOpt('reserved_host_memory_mb', default=512, min=0, help="""
Memory (MiB) held back for the host, reported as the ``reserved`` amount of
the ``MEMORY_MB`` inventory and counted as used in the compute node record.
"""),
    cfg.IntOpt('reserved_host_disk_mb', default=0, min=0, help="""
Disk (MiB) held back for the host: the ``reserved`` amount of the
``DISK_GB`` inventory (rounded up to whole GiB).
"""),
    _ratio('cpu_allocation_ratio', 'VCPU', 'initial_cpu_allocation_ratio'),
    _ratio('ram_allocation_ratio', 'MEMORY_MB',
           'initial_ram_allocation_ratio'),
    _ratio('disk_allocation_ratio', 'DISK_GB',
           'initial_disk_allocation_ratio'),
    # NOTE: Nova 34's defaults (VCPU 4, RAM 1, disk 1), which are also
    # what the scheduler assumes for a node that never reported a ratio.
    _initial_ratio('initial_cpu_allocation_ratio', 'VCPU', 4.0,
                   _CHANGED % ('16.0', '4.0')),
    _initial_ratio('initial_ram_allocation_ratio', 'MEMORY_MB', 1.0,
                   _CHANGED % ('1.5', '1.0')),
    _initial_ratio('initial_disk_allocation_ratio', 'DISK_GB', 1.0),
    cfg.StrOpt('instances_path', default='/var/lib/berth/instances',
               help="""
Where instance files live. The local driver reports the size of the file
system holding it as the node's disk and keeps its instance records there.
"""),
]


def register_opts(conf):
    """Register the resource tracker options in [DEFAULT]."""
    conf.register_opts(resource_tracker_opts)


def list_opts():
    """Options for the sample config."""
    return [('DEFAULT', resource_tracker_opts)]
