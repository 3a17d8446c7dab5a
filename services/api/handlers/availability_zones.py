# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /os-availability-zone: zones and, for admins, services.

A compute host is in the zones of its zone aggregates, or in
``[DEFAULT] default_availability_zone`` when it is in none; a zone is
listed only while it has compute services, so the default zone vanishes
once every host is in some zone (doc/behaviours.md §zones). A zone is available
when one of its compute services is enabled. The detail adds the
``internal`` zone of the control services (conductor, scheduler) and, per
host, each service's state::

    {"zoneName": "az1", "zoneState": {"available": true},
     "hosts": {"node1": {"berth-compute": {"available": true,
                                           "active": true,
                                           "updated_at": "..."}}}}
"""

from services.api import cell_hosts
from services.api.handlers import aggregates as agg_handlers
from services.api.handlers import services as service_handlers
from services.api import policies
from services.api.records import aggregates as agg_records
from services.api import util


def _zones(req, with_internal):
    """zone -> {'enabled': bool, 'hosts': {host: {binary: state}}}."""
    ctx = util.context(req)
    conf = util.conf(req)
    by_host = agg_records.zones_by_host(ctx)
    zones = {}
    for _cell, service in cell_hosts.list_services(ctx):
        is_compute = service['binary'] == cell_hosts.COMPUTE_BINARY
        if not is_compute and not with_internal:
            continue
        if is_compute:
            names = (by_host.get(service['host']) or
                     [conf.default_availability_zone])
        else:
            names = [agg_handlers.INTERNAL_ZONE]
        for name in names:
            zone = zones.setdefault(name, {'enabled': False, 'hosts': {}})
            if not service['disabled']:
                zone['enabled'] = True
                zone['hosts'].setdefault(service['host'], {})[
                    service['binary']] = {
                    'available': cell_hosts.is_up(service),
                    'active': True,
                    'updated_at': util.iso_micro(
                        service_handlers.updated_at(service)),
                }
    return zones


def list_zones(req):
    """GET /os-availability-zone: the compute zones and whether usable."""
    policies.authorize(req, 'os_compute_api:os-availability-zone:list')
    zones = _zones(req, with_internal=False)
    return util.json_response({'availabilityZoneInfo': [
        {'zoneName': name, 'zoneState': {'available': zone['enabled']},
         'hosts': None} for name, zone in sorted(zones.items())]})


def list_zones_detail(req):
    """GET /os-availability-zone/detail (admin): with hosts and services.
    """
    policies.authorize(req, 'os_compute_api:os-availability-zone:detail')
    zones = _zones(req, with_internal=True)
    return util.json_response({'availabilityZoneInfo': [
        {'zoneName': name, 'zoneState': {'available': zone['enabled']},
         'hosts': zone['hosts'] if zone['enabled'] else None}
        for name, zone in sorted(zones.items())]})
