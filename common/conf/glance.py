# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[glance]`` group: where the compute API reads images.

Image properties (``hw_cpu_policy``, ``hw_numa_nodes``...) drive
scheduling, so the compute API reads every image it boots. With a Glance
configured here (``endpoint_override``, or ``auth_type`` to find it in the
keystone catalog) it reads Glance v2; otherwise it keeps images in its own
api database and serves them at ``/image/v2/images``.
"""

from oslo_config import cfg

from common.conf import _ksa

DEFAULT_SERVICE_TYPE = 'image'

glance_group = cfg.OptGroup(
    'glance', title='Glance client options',
    help="""
How the compute API reaches the image service (Glance v2).

Leave endpoint_override and auth_type unset to use the built-in image
catalog of ``berth-api`` instead.
""")

glance_opts = [
    cfg.IntOpt(
        'num_retries', default=0, min=0,
        help="""
How many times a failed Glance request is retried (connection errors and
5xx answers only).
"""),
]


def register_opts(conf):
    """Register the [glance] options, the keystoneauth ones included."""
    conf.register_group(glance_group)
    conf.register_opts(glance_opts, group=glance_group)
    _ksa.register_client_opts(conf, glance_group, DEFAULT_SERVICE_TYPE)


def list_opts():
    """Options for the sample config."""
    return [(glance_group, glance_opts + _ksa.client_opts())]


def is_configured(conf):
    """True when [glance] names an image service to read images from."""
    group = conf.glance
    return bool(group.endpoint_override or group.auth_type)
