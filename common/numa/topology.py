# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Host and instance NUMA topologies and their JSON primitives.

A host topology is what a compute reports (one cell per host NUMA node,
with its usage); an instance topology is what a request asks for (one cell
per guest NUMA node) and, once fitted, where it landed: its cell ids are
then host cell ids and ``cpu_pinning`` maps guest vCPUs to host pCPUs.

Primitives are plain JSON: sets become sorted lists and ``cpu_pinning``
keys become strings; :meth:`from_primitive` turns both back.
"""

import copy
import dataclasses
import json

from common.objects import base

# NOTE: the page-size request constants; positive values are sizes in KiB.
SMALL = -1
LARGE = -2
ANY = -3

SHARED = 'shared'
DEDICATED = 'dedicated'
MIXED = 'mixed'
CPU_POLICIES = (SHARED, DEDICATED, MIXED)

PREFER = 'prefer'
ISOLATE = 'isolate'
REQUIRE = 'require'
THREAD_POLICIES = (PREFER, ISOLATE, REQUIRE)

SHARE = 'share'
EMULATOR_THREADS_POLICIES = (SHARE, ISOLATE)


# NOTE: class -> its dataclass field names, filled on first use.
_FIELD_NAMES = {}


def _primitive(value):
    """JSON form of ``value``: sorted lists for sets, str dict keys."""
    if isinstance(value, base.PrimitiveObject):
        return value.to_primitive()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, dict):
        return {str(k): _primitive(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_primitive(v) for v in value]
    return value


def _intset(value):
    return set() if value is None else {int(v) for v in value}


class _NUMAObject(base.PrimitiveObject):
    """A PrimitiveObject whose primitives are canonical (sorted) JSON."""

    def to_primitive(self):
        """A dict of JSON values; sets are sorted lists."""
        return {f.name: _primitive(getattr(self, f.name))
                for f in dataclasses.fields(self)}

    def copy(self):
        """A deep copy (fitting and usage updates never mutate inputs)."""
        return copy.deepcopy(self)

    @classmethod
    def from_primitive(cls, primitive):
        """Rebuild from :meth:`to_primitive`'s output (unknown keys ignored).

        NOTE: faster than the generic PrimitiveObject version, which reads
        the type hints on every call: the scheduler loads a host topology
        per candidate and the resource tracker one per instance, and the
        nested cells and pages are converted by ``__post_init__`` anyway.
        """
        if primitive is None:
            return None
        names = _FIELD_NAMES.get(cls)
        if names is None:
            names = _FIELD_NAMES[cls] = frozenset(
                f.name for f in dataclasses.fields(cls))
        return cls(**{k: v for k, v in primitive.items() if k in names})


@dataclasses.dataclass
class PageTopology(_NUMAObject):
    """The pages of one size on one host cell.

    :ivar size_kb: the page size in KiB (4 for small pages on x86).
    :ivar reserved: pages held back for the host (``reserved_huge_pages``).
    """

    size_kb: int = 4
    total: int = 0
    used: int = 0
    reserved: int = 0

    @property
    def free(self):
        """Pages an instance may still take."""
        return self.total - self.used - self.reserved


@dataclasses.dataclass
class HostCell(_NUMAObject):
    """One host NUMA node and its usage.

    :ivar cpuset: host CPUs for unpinned (shared) vCPUs.
    :ivar pcpuset: host CPUs for pinned (dedicated) vCPUs. Disjoint from
        ``cpuset`` with ``cpu_shared_set``/``cpu_dedicated_set``; equal to it
        in the legacy ``vcpu_pin_set`` layout.
    :ivar siblings: list of sets of hyperthread siblings (one per core).
    :ivar memory: MiB of memory on the node.
    :ivar mempages: list of :class:`PageTopology`, one per page size.
    :ivar pinned_cpus: host CPUs held by pinned instances (including the
        siblings an ``isolate`` instance keeps idle).
    :ivar cpu_usage: unpinned vCPUs floating over ``cpuset``.
    :ivar memory_usage: MiB given to instances.
    """

    id: int = 0
    cpuset: set = dataclasses.field(default_factory=set)
    pcpuset: set = dataclasses.field(default_factory=set)
    siblings: list = dataclasses.field(default_factory=list)
    memory: int = 0
    mempages: list = dataclasses.field(default_factory=list)
    pinned_cpus: set = dataclasses.field(default_factory=set)
    cpu_usage: int = 0
    memory_usage: int = 0

    def __post_init__(self):
        self.cpuset = _intset(self.cpuset)
        self.pcpuset = _intset(self.pcpuset)
        self.pinned_cpus = _intset(self.pinned_cpus)
        self.siblings = [_intset(s) for s in self.siblings or []]
        self.mempages = [p if isinstance(p, PageTopology)
                         else PageTopology.from_primitive(p)
                         for p in self.mempages or []]

    @property
    def free_pcpus(self):
        """Dedicated CPUs nobody has pinned."""
        return self.pcpuset - self.pinned_cpus

    @property
    def has_threads(self):
        """True when some core of this node has more than one thread."""
        return any(len(s) > 1 for s in self.siblings)

    def pages(self, size_kb):
        """The :class:`PageTopology` of ``size_kb`` pages, or None."""
        for pages in self.mempages:
            if pages.size_kb == size_kb:
                return pages
        return None


@dataclasses.dataclass
class HostTopology(_NUMAObject):
    """A host's NUMA cells (``compute_nodes.numa_topology``)."""

    cells: list = dataclasses.field(default_factory=list)

    def __post_init__(self):
        self.cells = [c if isinstance(c, HostCell)
                      else HostCell.from_primitive(c)
                      for c in self.cells or []]

    @property
    def has_threads(self):
        """True when the host has SMT (hyperthreading) enabled."""
        return any(cell.has_threads for cell in self.cells)

    def cell(self, cell_id):
        """The cell with ``cell_id``, or None."""
        for cell in self.cells:
            if cell.id == cell_id:
                return cell
        return None


@dataclasses.dataclass
class InstanceCell(_NUMAObject):
    """One guest NUMA node: what it asks for and, once fitted, where it is.

    :ivar id: the guest node index before fitting, the host cell id after.
    :ivar cpuset: guest vCPUs that float (shared policy).
    :ivar pcpuset: guest vCPUs that are pinned (dedicated policy).
    :ivar memory: MiB.
    :ivar pagesize: None, :data:`SMALL`, :data:`LARGE`, :data:`ANY` or a
        size in KiB; a fitted cell carries the size chosen on the host.
    :ivar cpu_pinning: guest vCPU -> host pCPU, for ``pcpuset``.
    :ivar cpuset_reserved: host CPUs this cell holds without running a
        vCPU on them (the idle siblings of ``isolate``).
    :ivar cpu_realtime: guest vCPUs of this node that run realtime.
    :ivar emulator_pcpus: host CPUs this cell holds for the guest's
        emulator threads (``hw:emulator_threads_policy=isolate``; only
        the first guest node has one).
    """

    id: int = 0
    cpuset: set = dataclasses.field(default_factory=set)
    pcpuset: set = dataclasses.field(default_factory=set)
    memory: int = 0
    pagesize: int = None
    cpu_policy: str = None
    cpu_thread_policy: str = None
    cpu_pinning: dict = None
    cpuset_reserved: set = dataclasses.field(default_factory=set)
    cpu_realtime: set = dataclasses.field(default_factory=set)
    emulator_pcpus: set = dataclasses.field(default_factory=set)

    def __post_init__(self):
        self.cpuset = _intset(self.cpuset)
        self.pcpuset = _intset(self.pcpuset)
        self.cpuset_reserved = _intset(self.cpuset_reserved)
        self.cpu_realtime = _intset(self.cpu_realtime)
        self.emulator_pcpus = _intset(self.emulator_pcpus)
        if self.cpu_pinning is not None:
            self.cpu_pinning = {int(k): int(v)
                                for k, v in self.cpu_pinning.items()}

    @property
    def vcpus(self):
        """Every guest vCPU of this node."""
        return self.cpuset | self.pcpuset

    @property
    def held_pcpus(self):
        """Host CPUs this cell takes out of the free pool once placed."""
        return (set((self.cpu_pinning or {}).values())
                | self.cpuset_reserved | self.emulator_pcpus)


@dataclasses.dataclass
class InstanceTopology(_NUMAObject):
    """A guest NUMA topology (``RequestSpec.numa_topology``).

    :ivar realtime_mask: the realtime mask as requested, for the driver.
    :ivar emulator_threads_policy: None, :data:`SHARE` or :data:`ISOLATE`
        (one more dedicated pCPU for the emulator threads).
    """

    cells: list = dataclasses.field(default_factory=list)
    realtime_mask: str = None
    emulator_threads_policy: str = None

    def __post_init__(self):
        self.cells = [c if isinstance(c, InstanceCell)
                      else InstanceCell.from_primitive(c)
                      for c in self.cells or []]

    @property
    def cpu_pinning_requested(self):
        """True when some vCPU is dedicated."""
        return any(cell.pcpuset for cell in self.cells)

    @property
    def emulator_threads_isolated(self):
        """True when the emulator threads get a pCPU of their own."""
        return self.emulator_threads_policy == ISOLATE

    @property
    def thread_policies(self):
        """The CPU thread policies the cells ask for."""
        return {cell.cpu_thread_policy for cell in self.cells
                if cell.pcpuset and cell.cpu_thread_policy}


@dataclasses.dataclass
class Limits(_NUMAObject):
    """Overcommit allowed for unpinned vCPUs and small-page memory.

    Written by NUMATopologyFilter into ``host_state.limits
    ['numa_topology']`` and handed to the compute claim.
    """

    cpu_allocation_ratio: float = 1.0
    ram_allocation_ratio: float = 1.0


def _load(value, cls):
    if value is None or isinstance(value, cls):
        return value
    if isinstance(value, (str, bytes)):
        value = json.loads(value)
    if isinstance(value, dict):
        return cls.from_primitive(value)
    # NOTE: a HostState, compute node record or RequestSpec: anything that
    # carries the primitive as ``numa_topology``.
    return _load(getattr(value, 'numa_topology', None), cls)


def load_host(value):
    """A :class:`HostTopology` from an object, primitive, JSON or holder.

    :param value: a HostTopology, its primitive dict or JSON string, or an
        object with a ``numa_topology`` attribute (HostState, compute node).
    :returns: the topology, or None when there is none.
    """
    return _load(value, HostTopology)


def load_instance(value):
    """An :class:`InstanceTopology` from an object, primitive, JSON or spec.

    :param value: as for :func:`load_host` (a RequestSpec works).
    """
    return _load(value, InstanceTopology)


def load_limits(value):
    """A :class:`Limits` from an object, primitive dict or None."""
    if value is None or isinstance(value, Limits):
        return value
    return Limits.from_primitive(value)
