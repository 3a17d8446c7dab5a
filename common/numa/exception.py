# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The NUMA request errors: one class per rule, each naming its key.

Everything under :class:`NUMARequestInvalid` is the user's request being
wrong (flavor extra specs or image properties), raised at API time by
:func:`common.numa.constraints.get_constraints`; the API maps that base
class to HTTP 400. :class:`CPUPinningInvalid` and friends are accounting
errors inside the compute agent, never the user's fault.
"""

from common import exception


class NUMARequestInvalid(exception.BerthException):
    """Base of every invalid NUMA/CPU/page-size request (HTTP 400)."""

    msg_fmt = 'Invalid NUMA topology request.'


class InvalidNUMASpec(NUMARequestInvalid):
    """A NUMA key whose value cannot be parsed."""

    msg_fmt = "Invalid value '%(value)s' for %(key)s: %(reason)s"


class InvalidNUMANodesNumber(NUMARequestInvalid):
    """hw:numa_nodes is not an integer in 1..128."""

    msg_fmt = ("Invalid value '%(nodes)s' for %(key)s: the number of NUMA "
               "nodes must be an integer between 1 and %(maximum)s")


class ImageNUMATopologyForbidden(NUMARequestInvalid):
    """The image sets what the flavor already sets."""

    msg_fmt = ("Image property '%(name)s' is not permitted to override NUMA "
               "configuration set against the flavor")


class ImageNUMATopologyIncomplete(NUMARequestInvalid):
    """numa_cpus/numa_mem missing for some node."""

    msg_fmt = ('NUMA topology not fully specified: %(key)s is needed for '
               'each of the %(nodes)s NUMA nodes (numbered from 0), and '
               'numa_cpus and numa_mem must be given together')


class ImageNUMATopologyAsymmetric(NUMARequestInvalid):
    """An even split of vCPUs or memory is impossible."""

    msg_fmt = ('%(key)s=%(nodes)s cannot split %(vcpus)s vCPUs and %(memory)s '
               'MB evenly; give hw:numa_cpus.N and hw:numa_mem.N explicitly')


class ImageNUMATopologyCPUOutOfRange(NUMARequestInvalid):
    """numa_cpus.N names a vCPU the flavor lacks."""

    msg_fmt = ('%(key)s names CPU %(cpunum)s, which is larger than the max '
               'vCPU id %(cpumax)s')


class ImageNUMATopologyCPUDuplicates(NUMARequestInvalid):
    """A vCPU is in two guest NUMA nodes."""

    msg_fmt = '%(key)s names CPU %(cpunum)s, already in another NUMA node'


class ImageNUMATopologyCPUsUnassigned(NUMARequestInvalid):
    """Some vCPUs are in no guest NUMA node."""

    msg_fmt = ('CPU(s) %(cpuset)s not assigned to any NUMA node by '
               '%(key)s.N')


class ImageNUMATopologyMemoryOutOfRange(NUMARequestInvalid):
    """numa_mem.N do not add up to the RAM."""

    msg_fmt = ('%(key)s.N sum to %(memsize)s MB, but the flavor has '
               '%(memtotal)s MB')


class InvalidCPUAllocationPolicy(NUMARequestInvalid):
    """hw:cpu_policy is not shared/dedicated/mixed."""

    msg_fmt = ("Invalid %(key)s '%(value)s': must be one of %(allowed)s")


class InvalidCPUThreadPolicy(NUMARequestInvalid):
    """hw:cpu_thread_policy is not prefer/isolate/require."""

    msg_fmt = ("Invalid %(key)s '%(value)s': must be one of %(allowed)s")


class ObsoleteCPUThreadPolicy(InvalidCPUThreadPolicy):
    """A pre-Ocata thread policy ('avoid', 'separate')."""

    msg_fmt = ("Invalid %(key)s '%(value)s': this thread policy is obsolete; "
               "use one of %(allowed)s ('isolate' replaces it)")


class ImageCPUPinningForbidden(NUMARequestInvalid):
    """The image asks for pinning a shared flavor forbids."""

    msg_fmt = ("Image property '%(key)s=%(value)s' is not permitted: the "
               "flavor sets hw:cpu_policy=shared")


class ImageCPUThreadPolicyForbidden(NUMARequestInvalid):
    """The image contradicts the flavor's thread policy."""

    msg_fmt = ("Image property 'hw_cpu_thread_policy=%(image)s' is not "
               "permitted to override hw:cpu_thread_policy=%(flavor)s set "
               "against the flavor")


class CPUThreadPolicyConfigurationInvalid(NUMARequestInvalid):
    """A thread policy without pinned CPUs."""

    msg_fmt = ("%(key)s=%(value)s needs hw:cpu_policy=dedicated or mixed; "
               "the CPU policy is shared")


class InvalidEmulatorThreadsPolicy(NUMARequestInvalid):
    """An emulator threads policy other than share or isolate."""

    msg_fmt = ("Invalid %(key)s '%(value)s': must be one of %(allowed)s")


class BadRequirementEmulatorThreadsPolicy(NUMARequestInvalid):
    """Isolated emulator threads without dedicated CPUs."""

    msg_fmt = ('An isolated CPU emulator threads option requires a '
               'dedicated CPU policy option: %(key)s=isolate needs '
               'hw:cpu_policy=dedicated (or mixed), the CPU policy is '
               '%(policy)s')


class CPUDedicatedMaskConfigurationInvalid(NUMARequestInvalid):
    """A dedicated mask without mixed policy."""

    msg_fmt = ('hw:cpu_dedicated_mask is only valid with '
               'hw:cpu_policy=mixed (the policy is %(policy)s)')


class MixedCPUPolicyMaskMissing(NUMARequestInvalid):
    """A mixed policy with no mask saying what to pin."""

    msg_fmt = ('hw:cpu_policy=mixed needs hw:cpu_dedicated_mask or a '
               'realtime mask (hw:cpu_realtime_mask) to say which vCPUs '
               'are dedicated')


class MixedCPUPolicyMaskInvalid(NUMARequestInvalid):
    """A mixed mask pinning none or all of the vCPUs."""

    msg_fmt = ("Invalid %(key)s '%(value)s': a mixed instance needs at "
               "least one dedicated and one shared vCPU among %(vcpus)s")


class RealtimeConfigurationInvalid(NUMARequestInvalid):
    """Realtime without pinned CPUs."""

    msg_fmt = ('hw:cpu_realtime needs hw:cpu_policy=dedicated or mixed '
               '(the policy is %(policy)s)')


class RealtimeMaskNotFoundOrInvalid(NUMARequestInvalid):
    """Realtime without a usable realtime mask."""

    msg_fmt = ('Realtime policy needs a vCPU mask (hw:cpu_realtime_mask or '
               'hw_cpu_realtime_mask) with at least 1 realtime vCPU and 1 '
               'ordinary vCPU; got %(value)s')


class MemoryPageSizeInvalid(NUMARequestInvalid):
    """A page size that cannot be parsed."""

    msg_fmt = ("Invalid %(key)s '%(pagesize)s': use small, large, any, or a "
               "size such as 2048, 2MB or 1GB")


class MemoryPageSizeForbidden(NUMARequestInvalid):
    """The image's page size contradicts the flavor's."""

    msg_fmt = ("Image property 'hw_mem_page_size=%(pagesize)s' is forbidden "
               "against hw:mem_page_size=%(against)s set on the flavor")


class CPUPinningInvalid(exception.BerthException):
    """Pinning a pCPU that is not free (accounting race)."""

    msg_fmt = ('CPU set to pin %(requested)s must be a subset of free CPU '
               'set %(available)s')


class CPUUnpinningInvalid(exception.BerthException):
    """Unpinning a pCPU that is not pinned."""

    msg_fmt = ('CPU set to unpin %(requested)s must be a subset of pinned '
               'CPU set %(pinned)s')
