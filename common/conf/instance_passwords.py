# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Generated instance passwords, in ``[DEFAULT]`` as in Nova."""

from oslo_config import cfg

# NOTE: Nova keeps this in [DEFAULT]; so does Berth, so that an operator's
# nova.conf line carries over unchanged. Whether the password is returned
# at all is [api] enable_instance_password (common/conf/api.py).
password_opts = [
    cfg.IntOpt('password_length', default=12, min=0, help="""
The length of the administrator password the compute API generates for a
server created without ``adminPass``.

The password is made of letters and digits (those easily mistaken for
one another left out), at least one of each kind while the length allows,
and is returned once, in the create-server response.

Possible values:

* An integer from 0; 0 gives an empty password.

Related options:

* [api] enable_instance_password: when False, no password is returned.
"""),
]


def register_opts(conf):
    """Register the instance password option in [DEFAULT]."""
    conf.register_opts(password_opts)


def list_opts():
    """Options for the sample config."""
    return [('DEFAULT', password_opts)]
