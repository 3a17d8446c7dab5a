# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Flavors as the scheduler and compute agents see them."""

import dataclasses

from common.objects import base


@dataclasses.dataclass
class Flavor(base.PrimitiveObject):
    """A flavor with its extra specs (``hw:*``, ``trait:*``, scoped keys)."""

    name: str = ''
    flavorid: str = ''
    vcpus: int = 0
    memory_mb: int = 0
    root_gb: int = 0
    ephemeral_gb: int = 0
    swap: int = 0
    extra_specs: dict = dataclasses.field(default_factory=dict)
    is_public: bool = True
