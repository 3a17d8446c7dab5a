# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Small read-mostly sub-resources of a server: ips, password, topology.

* ``/servers/{id}/ips`` and ``/ips/{network_label}``: Berth has no
  network service, so a server is on no network: the addresses are an
  empty map and every label is unknown (Nova's 404).
* ``/servers/{id}/os-server-password``: the encrypted password a guest
  posts to the metadata service, kept as Nova keeps it, in
  ``system_metadata`` ``password_0``..``password_3`` (255 characters
  each). Berth runs no metadata service, so nothing sets it but an
  operator's record; GET shows it (``""`` when unset), DELETE clears it.
* ``/servers/{id}/topology`` (2.78): the guest NUMA nodes of the
  instance's claimed topology; admins also see the host node and the
  vCPU to pCPU pinning.
"""

from common.db import instance_records
from common.numa import topology as numa_topology
from services.api import cell_hosts
from services.api import errors
from services.api.handlers import servers as server_handlers
from services.api import policies
from services.api import util

TOPOLOGY_VERSION = (2, 78)
PASSWORD_KEYS = tuple('password_%d' % i for i in range(4))
PASSWORD_CHUNK = 255


def list_ips(req):
    """GET /servers/{server_id}/ips: ``{"addresses": {}}``."""
    server_handlers.find_authorized(req, 'os_compute_api:ips:index')
    return util.json_response({'addresses': {}})


def show_ips(req):
    """GET /servers/{server_id}/ips/{network_label}.

    :raises errors.NotFound: always: a server is on no network in Berth.
    """
    server_handlers.find_authorized(req, 'os_compute_api:ips:show')
    raise errors.NotFound('Instance is not a member of specified network')


def password_of(instance):
    """The stored (encrypted) password of ``instance``, '' when unset."""
    meta = instance.system_metadata or {}
    return ''.join(meta.get(key) or '' for key in PASSWORD_KEYS)


def password_chunks(password):
    """system_metadata entries that store ``password`` ('' clears it)."""
    return {key: password[i * PASSWORD_CHUNK:(i + 1) * PASSWORD_CHUNK]
            for i, key in enumerate(PASSWORD_KEYS)}


def show_password(req):
    """GET /servers/{server_id}/os-server-password."""
    instance, _cell = server_handlers.find_authorized(
        req, 'os_compute_api:os-server-password:show')
    return util.json_response({'password': password_of(instance)})


def clear_password(req):
    """DELETE /servers/{server_id}/os-server-password: 204.

    :raises errors.Conflict: the server is still a build request (it has
        no record to clear yet).
    """
    instance, cell = server_handlers.find_authorized(
        req, 'os_compute_api:os-server-password:clear')
    if cell is None:
        raise errors.Conflict('Server %s is still being scheduled.'
                              % instance.uuid)
    meta = dict(instance.system_metadata or {})
    meta.update(password_chunks(''))
    instance_records.update_instance(
        util.context(req), cell_hosts.database(cell), instance.uuid,
        {'system_metadata': meta})
    return util.no_content(204)


def _node(cell, show_host, placed):
    body = {'memory_mb': cell.memory,
            'siblings': [],
            'vcpu_set': sorted(cell.vcpus)}
    if show_host:
        # NOTE: before a host claimed the topology a cell's id is the
        # guest node's index, not a host node.
        body['host_node'] = cell.id if placed else None
        body['cpu_pinning'] = {str(k): v for k, v in sorted(
            (cell.cpu_pinning or {}).items())}
    return body


def show_topology(req):
    """GET /servers/{server_id}/topology (2.78).

    ``siblings`` is always empty: the instance topology records no guest
    CPU threads. ``pagesize_kb`` is the page size the host chose (None
    before a host claimed the topology, or without one).
    """
    util.require_version(req, TOPOLOGY_VERSION)
    instance, _cell = server_handlers.find_authorized(
        req, 'os_compute_api:servers:topology:index')
    show_host = policies.authorize(
        req, 'os_compute_api:servers:topology:host:index',
        {'project_id': instance.project_id}, fatal=False)
    topology = numa_topology.InstanceTopology.from_primitive(
        instance.numa_topology)
    if topology is None:
        return util.json_response({'nodes': [], 'pagesize_kb': None})
    pagesize = None
    for cell in topology.cells:
        if cell.pagesize is not None and cell.pagesize > 0:
            pagesize = cell.pagesize
    return util.json_response({
        'nodes': [_node(c, show_host, bool(instance.host))
                  for c in topology.cells],
        'pagesize_kb': pagesize})
