# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Availability zone options, in ``[DEFAULT]`` as in Nova."""

from oslo_config import cfg

# NOTE: Nova keeps these in [DEFAULT]; so does Berth, so that an operator's
# nova.conf lines carry over unchanged.
availability_zone_opts = [
    cfg.StrOpt('default_availability_zone', default='nova', help="""
The availability zone of compute hosts that are in no zone aggregate.

A zone is a host aggregate with ``availability_zone`` metadata; every host
outside such aggregates is reported in, and scheduled as part of, this
zone. The zone disappears from zone listings when it has no hosts.

Possible values:

* Any string naming a zone (it must not contain a colon, which separates
  zone and host in ``--availability-zone zone:host``).

Related options:

* default_schedule_zone: the zone of requests that name none.
"""),
    cfg.StrOpt('default_schedule_zone', help="""
The availability zone given to requests that do not name one.

None (the default) lets such requests go to any zone. Setting it to a
zone keeps unzoned requests inside that zone.

Possible values:

* None, or the name of an existing availability zone.

Related options:

* default_availability_zone: the zone of hosts in no zone aggregate;
  setting both to the same name sends unzoned requests to those hosts.
"""),
]


def register_opts(conf):
    """Register the availability zone options in [DEFAULT]."""
    conf.register_opts(availability_zone_opts)


def list_opts():
    """Options for the sample config."""
    return [('DEFAULT', availability_zone_opts)]
