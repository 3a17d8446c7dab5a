# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""NUMA, CPU pinning and huge pages: the fitting library.

One library, two users: the scheduler's NUMATopologyFilter (and the
consume step after a host is selected) and the compute agent's local
claim, so that both sides agree on what fits.

- :mod:`common.numa.topology`: host and instance topologies as small
  dataclasses travelling as JSON primitives (``RequestSpec.numa_topology``,
  ``HostState.numa_topology``, ``compute_nodes.numa_topology``).
- :mod:`common.numa.constraints`: flavor extra specs and image properties
  to an instance topology (API time); every invalid request raises one of
  :mod:`common.numa.exception`'s classes, which the API turns into 400s.
- :mod:`common.numa.fit`: fit an instance onto a host, and add or remove
  an instance's usage; :mod:`common.numa.pinning` lays pinned vCPUs out
  according to the CPU thread policy.

Plain Python: no database, no RPC, no configuration.
"""
