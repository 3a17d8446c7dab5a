# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""SimpleCIDRAffinityFilter: the ``build_near_host_ip`` scheduler hint."""

import ipaddress

from services.scheduler import filters

HINT = 'build_near_host_ip'
CIDR_HINT = 'cidr'
DEFAULT_CIDR = '/24'


def affinity_network(spec_obj):
    """The network the hints name, or None without ``build_near_host_ip``.

    :raises ValueError: the address and the ``cidr`` make no network
        (``/33`` for IPv4, a netmask given with an IPv6 address).
    """
    address = spec_obj.get_scheduler_hint(HINT)
    if not address:
        return None
    cidr = spec_obj.get_scheduler_hint(CIDR_HINT, DEFAULT_CIDR)
    # NOTE: the hint names a host's address, not the network's; the host
    # bits are dropped, as a prefix length applied to an address means.
    return ipaddress.ip_network(address + cidr, strict=False)


class SimpleCIDRAffinityFilter(filters.BaseHostFilter):
    """Pass hosts whose IP is in the network ``build_near_host_ip`` names.

    ``--hint build_near_host_ip=192.0.2.10 --hint cidr=/24`` asks for a
    host in 192.0.2.0/24; ``cidr`` defaults to ``/24``. The host's IP is
    the compute node's ``host_ip``, which the compute agent records from
    its ``[DEFAULT] my_ip``. Without the hint every host passes.
    """

    # NOTE: neither the hint nor a host's IP change within a request.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def run_filter_for_request(self, spec_obj):
        """Only requests with the hint are filtered."""
        return bool(spec_obj.get_scheduler_hint(HINT))

    def host_passes(self, host_state, spec_obj):
        """True without the hint or when the host's IP is in its network."""
        try:
            network = affinity_network(spec_obj)
        except ValueError as error:
            return self.reject(host_state, 'the build_near_host_ip and cidr '
                               'hints make no network: %s', error)
        if network is None:
            return True
        if not host_state.host_ip:
            return self.reject(host_state, 'has no host IP recorded, so it '
                               'is not known to be in %s', network)
        try:
            host_ip = ipaddress.ip_address(host_state.host_ip)
        except ValueError:
            return self.reject(host_state, 'records host IP %r, not an IP '
                               'address', host_state.host_ip)
        if host_ip in network:
            return True
        return self.reject(host_state, 'host IP %s is not in %s', host_ip,
                           network)
