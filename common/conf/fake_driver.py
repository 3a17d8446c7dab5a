# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[fake_driver]`` group: the simulated compute hosts.

The ``fake`` virt driver turns these into hosts: how many one agent
process simulates, their names, and what each has (CPUs with sibling
threads over NUMA nodes, memory with huge pages, disk, PCI devices, GPUs).
Every simulated host gets the same hardware. Builds can be slowed down
and made to fail, for reschedule tests and benchmarks.
"""

from oslo_config import cfg

DEFAULT_HOST_NAME_PATTERN = '{host}-{index}'

fake_driver_group = cfg.OptGroup(
    'fake_driver', title='Fake virt driver',
    help='Simulated compute hosts for development, tests and benchmarks.')

fake_driver_opts = [
    cfg.IntOpt('host_count', default=1, min=1, help="""
How many hosts this agent process simulates. Each is a compute service of
its own (service record, RPC server, compute node, resource provider).

Related options:

* ``host_name_pattern`` names them when there is more than one.
"""),
    cfg.StrOpt('host_name_pattern', default=DEFAULT_HOST_NAME_PATTERN,
               help="""
Python format string naming the simulated hosts when ``host_count`` is
larger than 1: ``{host}`` is ``[DEFAULT] host``, ``{index}`` runs from 0
and ``{number}`` from 1. With one host and this default, the host is
``[DEFAULT] host`` itself.

Possible values:

* e.g. ``compute{index:04d}`` for compute0000, compute0001...
* e.g. ``rack1-host{number}`` for rack1-host1, rack1-host2...
"""),
    cfg.IntOpt('vcpus', default=16, min=1, help="""
Logical CPUs (hardware threads) of each host.

Related options:

* ``threads_per_core`` and ``numa_cells`` must divide it.
"""),
    cfg.IntOpt('threads_per_core', default=1, min=1, help="""
Hardware threads per core (2 simulates hyperthreading): threads of a core
are each other's siblings, which the CPU thread policies care about.
"""),
    cfg.IntOpt('numa_cells', default=1, min=1, help="""
NUMA nodes of each host; cores and memory are split evenly over them
(devices name their own node).
"""),
    cfg.StrOpt('sibling_numbering', default='linux',
               choices=[('linux', 'CPU n and n + cores are siblings, as '
                                  'Linux numbers x86 threads'),
                        ('adjacent', 'siblings have consecutive ids')],
               help="""
How CPU ids map to threads. With ``linux``, a 36-core, 72-thread host with
2 nodes has node 0 = CPUs 0-17 and 36-53 and CPU i's sibling is i + 36,
like the experiment host of doc/behaviours.md A8.
"""),
    cfg.IntOpt('memory_mb', default=32768, min=1, help="""
Memory (MiB) of each host, huge pages included.
"""),
    cfg.IntOpt('disk_gb', default=1024, min=0, help="""
Local disk (GiB) of each host.
"""),
    cfg.ListOpt('hugepages', default=[], help="""
Huge pages of each NUMA node, as ``size_kb:count`` items.

Possible values:

* e.g. ``2048:1024,1048576:4``: 1024 pages of 2 MiB and 4 of 1 GiB on every
  node. The rest of the node's memory is 4 KiB pages.
"""),
    cfg.MultiStrOpt('pci_device', default=[], help="""
A PCI device of each host, as a JSON object; repeat the option for more.

Keys: ``address`` (e.g. ``0000:81:00.0``), ``vendor_id``, ``product_id``,
``numa_node`` (null: no affinity), ``dev_type`` (``type-PCI`` by
default; ``type-PF`` for an SR-IOV physical function), ``vfs`` (number of
virtual functions of a PF), ``vf_product_id``, ``physical_network``, and
any extra tag.
"""),
    cfg.MultiStrOpt('gpu', default=[], help="""
A GPU of each host that offers mediated devices (vGPUs), as a JSON object;
repeat the option for more.

Keys: ``address`` (e.g. ``0000:25:00.4``), ``numa_node``, ``mdev_type``
(e.g. ``nvidia-610``, reported as the trait ``CUSTOM_NVIDIA_610``) and
``max_instances`` (how many vGPUs it can hold; the VGPU inventory).
"""),
    cfg.ListOpt('capabilities', default=[
        'COMPUTE_IMAGE_TYPE_RAW', 'COMPUTE_IMAGE_TYPE_QCOW2',
        'COMPUTE_IMAGE_TYPE_ISO', 'COMPUTE_DEVICE_TAGGING',
        'COMPUTE_NET_ATTACH_INTERFACE', 'COMPUTE_VOLUME_ATTACH_WITH_TAG',
        'COMPUTE_VOLUME_EXTEND', 'COMPUTE_TRUSTED_CERTS'], help="""
Capability traits each simulated host reports on its compute node provider.
"""),
    cfg.StrOpt('cpu_arch', default='x86_64', help="""
Architecture reported in ``cpu_info`` and ``supported_instances``.
"""),
    cfg.StrOpt('hypervisor_type', default='fake', help="""
Hypervisor type reported in the compute node record and
``supported_instances`` (what ``img_hv_type`` image properties match).
"""),
    cfg.IntOpt('hypervisor_version', default=1000, min=0, help="""
Hypervisor version reported in the compute node record.
"""),
    cfg.FloatOpt('spawn_latency', default=0.0, min=0.0, help="""
Seconds a simulated spawn takes.
"""),
    cfg.FloatOpt('spawn_failure_rate', default=0.0, min=0.0, max=1.0,
                 help="""
Probability that a simulated spawn fails (the build is then rescheduled).
"""),
    cfg.ListOpt('fail_hosts', default=[], help="""
Hosts on which every simulated spawn fails, for deterministic reschedule
tests.
"""),
    cfg.FloatOpt('action_latency', default=0.0, min=0.0, help="""
Seconds each power operation of a guest (power off, power on, reboot,
pause, unpause, suspend, resume), and each driver step of a resize or
cold migration, takes on the simulated hypervisor. The server stays in
its task state (``powering-off``, ``resize_migrating``...) meanwhile.

Related options:

* ``action_failure_rate``, ``fail_actions``.
"""),
    cfg.FloatOpt('action_failure_rate', default=0.0, min=0.0, max=1.0,
                 help="""
Probability that a power operation fails on the simulated hypervisor. A
failed operation leaves the guest as it was; the server gets a fault, its
task state is cleared, and a failed reboot puts it in ERROR unless the
guest still runs, as Nova does. A step of a resize or cold migration fails
at the same rate (the move is rescheduled or rolled back).

Possible values:

* 0.0 (never) to 1.0 (always).

Related options:

* ``fail_actions`` makes chosen operations always fail.
"""),
    cfg.ListOpt('fail_actions', default=[], help="""
Power operations (and steps of moves) that always fail on the simulated
hypervisor, whatever ``action_failure_rate`` says.

Possible values:

* any of ``power_off``, ``power_on``, ``reboot``, ``pause``, ``unpause``,
  ``suspend``, ``resume``: that operation fails on every host;
* a step of a resize or cold migration: ``prep_resize`` (the
  destination refuses the server, which is rescheduled to an alternate),
  ``migrate_disk_and_power_off`` (source), ``finish_migration``
  (destination), ``confirm_migration``, ``finish_revert_migration``;
* ``<operation>:<host>`` (e.g. ``suspend:compute3``): it fails on that
  host only.
"""),
]


# NOTE: live migration simulation (services/compute/live_migration.py).
fake_driver_opts += [
    cfg.FloatOpt('live_migration_time', default=0.0, min=0.0, help="""
Seconds the simulated copy of a live migration takes. The copy runs in
ten steps, each writing the migration's progress (``memory_*`` and, for a
block migration, ``disk_*`` bytes); an abort or a force-complete is
noticed between steps.

Possible values:

* 0 (the default): the copy is done at once (benchmarks);
* e.g. 5: long enough to abort or force-complete it.
"""),
    cfg.DictOpt('live_migration_time_by_host', default={}, help="""
Seconds the simulated copy of a live migration to a given destination
takes, instead of ``live_migration_time``.

Possible values:

* ``<host>:<seconds>`` pairs, e.g. ``compute3:10,compute4:0``: copies
  to compute3 take 10 seconds (long enough to abort or force-complete
  them from a slow client), those to compute4 are instant, the others
  take ``live_migration_time``.
"""),
    cfg.ListOpt('fail_live_migrations', default=[], help="""
Live migrations that always fail on the simulated hypervisor.

Possible values:

* ``check:<host>``: the pre-checks of a live migration to ``<host>``
  fail (the conductor then tries another destination);
* ``copy:<host>``: the copy to ``<host>`` fails half-way (the migration
  is rolled back: the server stays on its source).
"""),
]


def register_opts(conf):
    """Register the [fake_driver] options."""
    conf.register_group(fake_driver_group)
    conf.register_opts(fake_driver_opts, group=fake_driver_group)


def list_opts():
    """Options for the sample config."""
    return [(fake_driver_group, fake_driver_opts)]
