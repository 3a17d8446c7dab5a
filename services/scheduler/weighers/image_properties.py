# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ImagePropertiesWeigher: prefer hosts running instances of similar images."""

import logging

from common.conf import CONF
from services.scheduler import weighers

LOG = logging.getLogger(__name__)


def parse_weight_setting(items):
    """Parse ``["os_distro=1", ...]`` into a property -> ratio dict.

    NOTE: an unreadable item is skipped with a warning rather than stopping
    the scheduler; the other properties still weigh.
    """
    ratios = {}
    for item in items:
        name, sep, ratio = item.partition('=')
        name = name.strip()
        try:
            if not sep or not name:
                raise ValueError(item)
            ratios[name] = float(ratio)
        except ValueError:
            LOG.warning('Image property weight setting %r is not '
                        '"property=ratio"; ignoring it.', item)
    return ratios


class ImagePropertiesWeigher(weighers.BaseHostWeigher):
    """Weigh hosts by their instances of images like the requested one.

    For each instance on the host, every image property equal (compared as
    strings) to the same property of the requested image adds its ratio
    from ``image_props_weight_setting``: with the setting empty each
    property adds 1, otherwise only the listed properties count. The default
    ``image_props_weight_multiplier`` is 0.0 (off).

    The host state only knows each instance's ``image_id``, not its image
    properties. An instance without property data therefore adds 1 when it
    runs the very image requested, and nothing otherwise: the weigher then
    counts the instances of the same image on the host. An instance record
    carrying an ``image_properties`` dict is weighed property by property.
    """

    def __init__(self):
        self._parsed = (None, {})

    def _ratios(self):
        """The parsed setting, re-parsed only when the option changes."""
        raw = tuple(CONF.filter_scheduler.image_props_weight_setting)
        if self._parsed[0] != raw:
            self._parsed = (raw, parse_weight_setting(raw))
        return self._parsed[1]

    def weight_multiplier(self, host_state):
        """``image_props_weight_multiplier`` or the aggregate override."""
        return weighers.aggregate_multiplier(
            host_state, 'image_props_weight_multiplier',
            CONF.filter_scheduler.image_props_weight_multiplier)

    def _weigh_object(self, host_state, spec_obj):
        """The summed property matches of the instances on the host."""
        image = spec_obj.image
        if image is None:
            return 0.0
        ratios = self._ratios()
        wanted = {name: str(value)
                  for name, value in image.properties.items()
                  if not ratios or name in ratios}
        score = 0.0
        for info in host_state.instances.values():
            properties = getattr(info, 'image_properties', None)
            if properties is None:
                # NOTE: the same image has the same properties by
                # definition; a different image id says nothing either way
                # without its properties, so it counts 0.
                if image.id and info.image_id == image.id:
                    score += 1.0
                continue
            for name, value in wanted.items():
                if name in properties and str(properties[name]) == value:
                    score += ratios.get(name, 1.0)
        return score
