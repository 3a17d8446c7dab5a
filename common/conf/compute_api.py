# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[compute_api]`` group: how berth-manage reaches the API.

``berth-manage host drain`` moves servers the way an operator would, with
the compute REST API's own actions (``os-migrateLive``, ``migrate``,
``confirmResize``, ``PUT /os-services``), so that every move gets the
API's checks, its instance actions and its policies. This group holds
keystoneauth's session, auth and adapter options for that client
(``auth_type`` and credentials, or ``endpoint_override`` with a token),
as ``[placement]`` does for placement. No service reads it.
"""

from oslo_config import cfg

from common.conf import _ksa

GROUP = 'compute_api'
DEFAULT_SERVICE_TYPE = 'compute'

compute_api_group = cfg.OptGroup(
    GROUP, title='Compute API client options',
    help="""
How ``berth-manage`` commands that act through the compute REST API
(``host drain``) reach it: keystoneauth's options, as in ``[placement]``.

Set ``auth_type`` and its credentials to find the endpoint in the keystone
catalog (service type ``compute``), or ``endpoint_override`` (the API's
``/v2.1`` URL) with ``auth_type = admin_token`` and ``token`` when the API
runs with ``[api] auth_strategy = noauth2`` (the token ``admin``). The
credentials must be an admin's: the moves and the service update are
admin actions. ``berth-all-in-one`` writes this group into the
configuration file it derives.

Related options:

* ``timeout``: seconds each call may take (the default waits long
  enough for a cold migration's scheduling, which the API answers only
  once the destination is chosen).
""")


def register_opts(conf):
    """Register the keystoneauth options of [compute_api]."""
    conf.register_group(compute_api_group)
    _ksa.register_client_opts(conf, compute_api_group, DEFAULT_SERVICE_TYPE)


def list_opts():
    """Options for the sample config."""
    return [(compute_api_group, _ksa.client_opts())]


def is_configured(conf):
    """True when [compute_api] says where the compute API is."""
    group = conf[GROUP]
    return bool(group.endpoint_override or group.auth_type)
