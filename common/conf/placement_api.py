# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[placement_api]`` group: the built-in HTTP server."""

from oslo_config import cfg

from common.conf import _http_server

placement_api_group = cfg.OptGroup(
    'placement_api', title='Placement API server options',
    help="""
The threaded HTTP server started by ``berth-placement-api``. A deployment
behind uwsgi or gunicorn uses ``services.placement.wsgi:application``
instead and ignores these.
""")

placement_api_opts = [
    cfg.HostAddressOpt(
        'bind_host', default='0.0.0.0',
        help='The address the placement API listens on.'),
    cfg.PortOpt(
        'bind_port', default=8778,
        help='The TCP port the placement API listens on.'),
    cfg.IntOpt(
        'threads', default=16, min=1,
        help="""
The number of request threads of the built-in server.

Each thread holds at most one database connection at a time, so keep
[placement_database] max_pool_size plus max_overflow at or above this.
"""),
] + _http_server.server_opts('berth-placement-api')


def register_opts(conf):
    """Register the [placement_api] options."""
    conf.register_group(placement_api_group)
    conf.register_opts(placement_api_opts, group=placement_api_group)


def list_opts():
    """Options for the sample config."""
    return [(placement_api_group, placement_api_opts)]
