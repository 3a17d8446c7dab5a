# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of every RPC service in ``[DEFAULT]``: host, heartbeats, tasks.

The transport options (``transport_url``, ``rpc_response_timeout``,
``[oslo_messaging_*]``) are oslo.messaging's own: it registers them and the
config generator lists them through the ``oslo.messaging`` namespace.
"""

import socket

from oslo_config import cfg
from oslo_utils import netutils

service_opts = [
    cfg.HostAddressOpt('host', default=socket.gethostname(),
                       sample_default='<current_hostname>', help="""
The name this service runs as: its RPC server listens on ``<topic>.<host>``
and its service record is keyed by it.

Possible values:

* A host name, FQDN or IP address unique among the services of one binary.
  It must match the compute node's ``host`` for berth-compute.
"""),
    cfg.StrOpt('my_ip', default=netutils.get_my_ipv4(),
               sample_default='<host_ipv4>', help="""
The IP address of this host, as Nova's ``[DEFAULT] my_ip``.

berth-compute records it as its compute nodes' ``host_ip`` (shown by
``hypervisor show``), which ``SimpleCIDRAffinityFilter`` compares with
the ``build_near_host_ip`` scheduler hint. A virt driver that knows a
node's address itself takes precedence.

Possible values:

* An IPv4 or IPv6 address; the default is the address of the interface
  of the default route.
"""),
    cfg.IntOpt('report_interval', default=10, min=1, help="""
Seconds between two heartbeats of a service to its service record.

Related options:

* ``service_down_time``: must be larger, or every service looks down
  between two heartbeats.
"""),
    cfg.IntOpt('service_down_time', default=60, min=1, help="""
Seconds without a heartbeat after which a service counts as down.

A down compute is not scheduled to; an instance on it is deleted locally
by the API.

Related options:

* ``report_interval``: a value not larger than it is raised to 2.5 times
  ``report_interval`` with a warning.
"""),
    cfg.IntOpt('long_rpc_timeout', default=1800, min=1, help="""
Seconds a caller waits for an RPC call known to take long (a live
migration check, a build that waits on a volume).

Related options:

* ``rpc_response_timeout``: such calls use it as their
  ``call_monitor_timeout``, so a dead server is still noticed that fast.
"""),
    cfg.BoolOpt('periodic_enable', default=True, help="""
Run the services' periodic tasks (audits, resource updates, cache refresh).

Disable only for debugging: a compute without its periodic resource
tracker stops reporting to placement.
"""),
    cfg.IntOpt('periodic_fuzzy_delay', default=60, min=0, help="""
Upper bound, in seconds, of a random delay before the first periodic task
run, so that services started together do not hit the database or
placement at the same moment. 0 starts them at once.
"""),
    cfg.StrOpt('servicegroup_driver', default='db',
               choices=[('db', 'Service records in the cell database'),
                        ('memory', 'In-process records (tests, '
                                   'all-in-one)'),
                        ('conductor', 'Service records through the '
                                      'conductor (compute agents, which '
                                      'have no database credentials)')],
               help="""
Where services keep their service records and heartbeats, from which
up/down is decided.
"""),
]


def register_opts(conf):
    """Register the service options in [DEFAULT]."""
    conf.register_opts(service_opts)


def list_opts():
    """Options for the sample config."""
    return [('DEFAULT', service_opts)]
