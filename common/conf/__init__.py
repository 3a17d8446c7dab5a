# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Berth's configuration: one module per option group, all registered here.

Every service imports ``common.conf.CONF``; options are registered on import
so that a test or a tool never sees a half-registered configuration.
"""

from oslo_config import cfg

from common.conf import opts

CONF = cfg.CONF

opts.register_all(CONF)
