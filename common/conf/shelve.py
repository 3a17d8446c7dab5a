# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Shelved servers, in ``[DEFAULT]`` as in Nova."""

from oslo_config import cfg

# NOTE: Nova keeps this in [DEFAULT]; so does Berth, so that an operator's
# nova.conf line carries over unchanged.
shelve_opts = [
    cfg.IntOpt('shelved_offload_time', default=0, min=-1, help="""
How long a shelved server keeps its guest and its resources on its host
before it is offloaded, in seconds.

A shelved server (``SHELVED``) is powered off but still holds its host's
resources (its placement allocation), so that unshelving it only powers
it on again. Offloading (``SHELVED_OFFLOADED``) destroys the guest and
releases the resources; unshelving then schedules the server again.

Possible values:

* 0: offload at once, as part of the shelve (the default, as Nova's).
* -1: never offload by time (an admin's ``shelveOffload`` still does).
* A positive number of seconds: each compute agent offloads its servers
  that have been shelved that long, at its ``shelved_poll_interval``.

Related options:

* shelved_poll_interval
"""),
    cfg.IntOpt('shelved_poll_interval', default=3600, min=0, help="""
Seconds between two looks of a compute agent for shelved servers to
offload (those shelved longer than ``shelved_offload_time``).

Possible values:

* 0: never look (servers are offloaded only by ``shelveOffload`` or at
  once with ``shelved_offload_time = 0``).
* A positive number of seconds.

Related options:

* shelved_offload_time: the look is skipped unless this is positive.
"""),
]


def register_opts(conf):
    """Register the shelve options in [DEFAULT]."""
    conf.register_opts(shelve_opts)


def list_opts():
    """Options for the sample config."""
    return [('DEFAULT', shelve_opts)]
