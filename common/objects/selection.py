# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""What the scheduler answers for each instance: a host and alternates."""

import dataclasses

from common.objects import base


@dataclasses.dataclass
class Selection(base.PrimitiveObject):
    """One destination with the allocation request that claims it.

    :ivar allocation_request: the placement allocation request (JSON text)
        that was claimed (first entry) or can be claimed (alternates).
    :ivar limits: resource limits the filters computed for the compute-side
        claim (e.g. ``vcpu``, ``memory_mb``, ``numa_topology``).
    :ivar availability_zone: the host's zone as the scheduler saw it.
    :ivar decision: on the chosen Selection of each instance, the bounded
        record of why it was chosen (services.scheduler.decision_record);
        None on alternates and once stored.
    """

    service_host: str = None
    nodename: str = None
    compute_node_uuid: str = None
    cell_uuid: str = None
    limits: dict = dataclasses.field(default_factory=dict)
    allocation_request: str = None
    allocation_request_version: str = None
    availability_zone: str = None
    decision: dict = None
