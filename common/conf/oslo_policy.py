# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The ``[oslo_policy]`` group, owned by oslo.policy.

Registered at import so that a process can read or override
``enforce_new_defaults`` and ``policy_file`` before its first policy check.
The sample config lists these options through the ``oslo.policy``
namespace of the config generator, so :func:`list_opts` returns nothing.
"""

from oslo_policy import opts as policy_opts


def register_opts(conf):
    """Register oslo.policy's options with Berth's file name default."""
    policy_opts.set_defaults(conf, policy_file='policy.yaml')


def list_opts():
    """Listed by the oslo.policy namespace instead."""
    return []
