# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server groups as the scheduler needs them."""

import dataclasses

from common.objects import base

AFFINITY = 'affinity'
ANTI_AFFINITY = 'anti-affinity'
SOFT_AFFINITY = 'soft-affinity'
SOFT_ANTI_AFFINITY = 'soft-anti-affinity'
POLICIES = (AFFINITY, ANTI_AFFINITY, SOFT_AFFINITY, SOFT_ANTI_AFFINITY)


@dataclasses.dataclass
class InstanceGroup(base.PrimitiveObject):
    """A server group: one policy, its rules, members and their hosts.

    :ivar rules: e.g. ``{'max_server_per_host': 2}`` (anti-affinity only).
    :ivar hosts: the hosts the group's members already run on (one entry
        per member, so a host may repeat).
    """

    uuid: str = None
    name: str = ''
    policy: str = AFFINITY
    rules: dict = dataclasses.field(default_factory=dict)
    members: list = dataclasses.field(default_factory=list)
    hosts: list = dataclasses.field(default_factory=list)

    @property
    def max_server_per_host(self):
        """The anti-affinity limit per host (1 unless the rule says more)."""
        return int(self.rules.get('max_server_per_host', 1))
