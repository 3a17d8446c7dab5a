# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[cors]`` group, owned by oslo.middleware.

Registered here so that the sample config shows them and the APIs can
check ``allowed_origin`` before wrapping themselves in the CORS middleware.
"""

from oslo_middleware import cors

cors_group = 'cors'


def register_opts(conf):
    """Register oslo.middleware's [cors] options."""
    conf.register_opts(cors.CORS_OPTS, group=cors_group)


def list_opts():
    """Options for the sample config."""
    return [(cors_group, cors.CORS_OPTS)]
