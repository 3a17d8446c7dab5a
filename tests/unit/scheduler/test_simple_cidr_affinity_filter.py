# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""SimpleCIDRAffinityFilter: the build_near_host_ip and cidr hints."""

import pytest

from services.scheduler import filters
from services.scheduler.filters import simple_cidr_affinity_filter
from tests.unit.scheduler import fakes

FILTER = simple_cidr_affinity_filter.SimpleCIDRAffinityFilter()


def _spec(**hints):
    return fakes.spec(scheduler_hints={k: [v] for k, v in hints.items()})


@pytest.mark.parametrize('host_ip,hints,expected', [
    # without the hint every host passes, with or without an IP
    ('192.0.2.10', {}, True),
    (None, {}, True),
    # cidr defaults to /24
    ('192.0.2.10', {'build_near_host_ip': '192.0.2.200'}, True),
    ('192.0.3.10', {'build_near_host_ip': '192.0.2.200'}, False),
    ('192.0.3.10', {'build_near_host_ip': '192.0.2.200', 'cidr': '/16'},
     True),
    ('192.0.2.129', {'build_near_host_ip': '192.0.2.1', 'cidr': '/25'},
     False),
    ('192.0.2.1', {'build_near_host_ip': '192.0.2.1', 'cidr': '/32'}, True),
    ('192.0.2.2', {'build_near_host_ip': '192.0.2.1', 'cidr': '/32'}, False),
    # a netmask instead of a prefix length
    ('10.1.2.3', {'build_near_host_ip': '10.1.9.9',
                  'cidr': '/255.255.0.0'}, True),
    ('10.2.2.3', {'build_near_host_ip': '10.1.9.9',
                  'cidr': '/255.255.0.0'}, False),
    # IPv6
    ('2001:db8::7', {'build_near_host_ip': '2001:db8::1', 'cidr': '/64'},
     True),
    ('2001:db8:1::7', {'build_near_host_ip': '2001:db8::1', 'cidr': '/64'},
     False),
    # a host of the other address family is never in the network
    ('192.0.2.10', {'build_near_host_ip': '2001:db8::1', 'cidr': '/0'},
     False),
    # a host whose IP was never recorded is not known to be near
    (None, {'build_near_host_ip': '192.0.2.1'}, False),
    # a cidr that makes no network with the address passes nothing
    ('192.0.2.10', {'build_near_host_ip': '192.0.2.1', 'cidr': '/33'},
     False),
])
def test_cidr_affinity(host_ip, hints, expected):
    host = fakes.host('h1', host_ip=host_ip)
    assert FILTER.host_passes(host, _spec(**hints)) is expected


def test_only_requests_with_the_hint_are_filtered():
    assert not FILTER.run_filter_for_request(_spec())
    assert not FILTER.run_filter_for_request(_spec(cidr='/16'))
    assert FILTER.run_filter_for_request(
        _spec(build_near_host_ip='192.0.2.1'))


def test_hosts_near_an_address():
    hosts = [fakes.host(name, host_ip=ip) for name, ip in (
        ('r1-a', '192.0.2.11'), ('r1-b', '192.0.2.12'),
        ('r2-a', '198.51.100.11'))]
    spec = _spec(build_near_host_ip='192.0.2.50')
    assert [h.host for h in FILTER.filter_all(hosts, spec)] == [
        'r1-a', 'r1-b']


@pytest.mark.parametrize('host_ip,hints,reason', [
    ('192.0.3.10', {'build_near_host_ip': '192.0.2.200'},
     'host IP 192.0.3.10 is not in 192.0.2.0/24'),
    (None, {'build_near_host_ip': '192.0.2.1', 'cidr': '/16'},
     'has no host IP recorded, so it is not known to be in 192.0.0.0/16'),
    ('192.0.2.10', {'build_near_host_ip': '192.0.2.1', 'cidr': '/33'},
     'the build_near_host_ip and cidr hints make no network: '
     "'192.0.2.1/33' does not appear to be an IPv4 or IPv6 network"),
])
def test_reason(host_ip, hints, reason):
    with filters.Rejections() as rejections:
        assert not FILTER.host_passes(fakes.host('h1', host_ip=host_ip),
                                      _spec(**hints))
    assert rejections.by_host[('h1', 'h1')] == (
        'SimpleCIDRAffinityFilter', reason)
