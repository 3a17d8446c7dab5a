# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The ``clouds.yaml`` the all-in-one writes: one cloud entry, ``berth``.

A development convenience for noauth2 only: the entry authenticates with a
password against the compute API's Keystone stand-in
(``services/api/handlers/identity.py``), which checks no password and hands
out a noauth2 token with a catalog naming compute, image and placement. The
stock ``openstack`` client (osc-placement included) and openstacksdk then
need ``OS_CLOUD=berth OS_CLIENT_CONFIG_FILE=<state>/clouds.yaml`` and
nothing else. Production uses Keystone and its own clouds.yaml.
"""

import os

import yaml

from services.api.handlers import identity
from services.placement import microversion as placement_microversion

CLOUD = 'berth'
FILE_NAME = 'clouds.yaml'
# NOTE: an administrator, so that every README command (placement's and
# the admin-only compute ones) works; ``user:project`` tokens of members
# come from another username/project_name.
USER = 'admin'
PROJECT = 'admin'
# NOTE: the stand-in checks no password; clients insist on having one.
PASSWORD = 'noauth2-checks-no-password'


def entry(api_url):
    """The ``berth`` cloud of a compute API at ``api_url``."""
    return {
        'auth_type': 'password',
        'auth': {
            'auth_url': api_url.rstrip('/') + '/identity',
            'username': USER,
            'password': PASSWORD,
            'project_name': PROJECT,
            'user_domain_name': identity.DOMAIN['name'],
            'project_domain_name': identity.DOMAIN['name'],
        },
        'identity_api_version': '3',
        'region_name': identity.REGION,
        'interface': 'public',
        # NOTE: osc-placement starts at 1.0 otherwise, where
        # ``allocation candidate list`` does not exist yet.
        'placement_api_version': str(placement_microversion.MAX_VERSION),
    }


def write(state, api_url):
    """Write ``<state>/clouds.yaml`` naming the ``berth`` cloud.

    :param state: the all-in-one's :class:`state.StateDir`.
    :param api_url: the compute API's root URL.
    :returns: the file's path.
    """
    path = state.file(FILE_NAME)
    text = ('# Written by berth-all-in-one for its noauth2 development '
            'cloud; production\n# uses Keystone. Use it with:\n'
            '#   export OS_CLOUD=%s OS_CLIENT_CONFIG_FILE=%s\n' % (
                CLOUD, path))
    text += yaml.safe_dump({'clouds': {CLOUD: entry(api_url)}},
                           default_flow_style=False, sort_keys=False)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w') as f:
        f.write(text)
    return path


def export_line(path):
    """The shell line that selects the cloud."""
    return 'export OS_CLOUD=%s OS_CLIENT_CONFIG_FILE=%s' % (CLOUD, path)
