# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Image metadata: the properties that drive scheduling and placement."""

import dataclasses

from common.objects import base


@dataclasses.dataclass
class ImageMeta(base.PrimitiveObject):
    """An image and its properties (``hw_*``, ``img_*``, ``trait:*``).

    Property values are kept as the strings Glance stores; readers convert.
    """

    id: str = None
    name: str = ''
    min_ram: int = 0
    min_disk: int = 0
    properties: dict = dataclasses.field(default_factory=dict)

    def get(self, name, default=None):
        """The value of image property ``name``, or ``default``."""
        return self.properties.get(name, default)
