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
    """Register oslo.middleware's [cors] options with Berth's defaults."""
    conf.register_opts(cors.CORS_OPTS, group=cors_group)
    # NOTE: browsers may only send and read the headers listed here; the
    # microversion and request id headers are what API clients need.
    cors.set_defaults(
        allow_headers=['X-Auth-Token', 'X-Openstack-Request-Id',
                       'OpenStack-API-Version'],
        expose_headers=['X-Auth-Token', 'X-Openstack-Request-Id',
                        'OpenStack-API-Version'],
        allow_methods=['GET', 'PUT', 'POST', 'DELETE', 'PATCH'])


def list_opts():
    """Options for the sample config."""
    return [(cors_group, cors.CORS_OPTS)]
