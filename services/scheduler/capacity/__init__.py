# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Capacity answers: headroom (how many more fit) and what-if (re-placing
the servers of lost hosts), on the scheduler's own pipeline.

:mod:`fill` consumes host states one instance at a time (placement's
figures, the host filters, NUMA and PCI fit); :mod:`headroom` and
:mod:`what_if` are the two questions asked of it (doc/operations.md).
"""
