# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[api]`` group: how the HTTP APIs authenticate."""

from oslo_config import cfg

api_group = cfg.OptGroup(
    'api', title='API options',
    help='Options shared by the HTTP APIs (placement and compute).')

api_opts = [
    cfg.StrOpt(
        'auth_strategy',
        default='keystone',
        choices=[
            ('keystone', 'Validate tokens with keystonemiddleware.'),
            ('noauth2', 'Development only: the X-Auth-Token header names '
                        'the caller. "admin" is an admin of project "admin"; '
                        '"user:project" is that user in that project.'),
        ],
        help="""
The authentication strategy of the HTTP APIs.

Possible values:

* keystone: production; configure [keystone_authtoken].
* noauth2: no real authentication. Never use it where the API is reachable
  by anybody you do not trust.
"""),
]


def register_opts(conf):
    """Register the [api] options."""
    conf.register_group(api_group)
    conf.register_opts(api_opts, group=api_group)


def list_opts():
    """Options for the sample config."""
    return [(api_group, api_opts)]
