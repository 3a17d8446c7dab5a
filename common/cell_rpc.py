# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""RPC clients per cell: each cell may have its own message queue.

A cell mapping names the transport URL of its computes. When it is the
process's own ``[DEFAULT] transport_url`` (or unset, ``none:///``, or the
in-process ``fake://``), the ordinary client is used; otherwise a
transport to that URL is made once and kept, and the cell gets a client of
its own on it.

NOTE: the client class is the caller's: ``CellClients(ComputeAPI)``. The
conductor and the API both reach compute agents per cell, so the transport
bookkeeping is shared here; which RPC API rides on it belongs to the
service that owns that API, and common/ never imports services/ (the
layering rules, checked by tests/unit/test_layering.py). Any API object
with an oslo.messaging ``client`` attribute works, which also lets tests
pass a fake.
"""

import logging
import threading

import oslo_messaging as messaging

import common.conf
from common import rpc

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF

_NO_TRANSPORT = ('', 'none:///', 'none://', 'none:')


def uses_default_transport(url, conf=None):
    """True when a cell's transport URL is this process's own transport."""
    conf = conf or CONF
    if url is None or url.strip() in _NO_TRANSPORT:
        return True
    if url.startswith('fake:'):
        # NOTE: fake:// lives in one process; a second fake transport would
        # be a separate, empty message bus.
        return True
    if url == conf.transport_url:
        return True
    try:
        return (messaging.TransportURL.parse(conf, url) ==
                messaging.TransportURL.parse(conf, conf.transport_url))
    except Exception:
        return False


class CellClients(object):
    """Hands out one RPC API object per cell transport; thread-safe.

    :param factory: ``factory()`` -> a new RPC API object with a
        ``client`` attribute (an oslo.messaging RPC client), for example
        ``services.compute.rpcapi.ComputeAPI``. It is called once for the
        default transport and once per cell with a transport of its own.
    """

    def __init__(self, factory):
        self._factory = factory
        self._lock = threading.Lock()
        self._default = None
        self._by_url = {}
        self._transports = []

    def default(self):
        """The RPC API on this process's transport."""
        with self._lock:
            if self._default is None:
                self._default = self._factory()
            return self._default

    def for_cell(self, cell):
        """The RPC API for a CellMapping (None: the default one)."""
        url = None if cell is None else cell.transport_url
        if uses_default_transport(url):
            return self.default()
        with self._lock:
            api = self._by_url.get(url)
            if api is None:
                api = self._on_transport(url)
                self._by_url[url] = api
            return api

    def _on_transport(self, url):
        LOG.info('Using a transport of its own for cell computes at %s',
                 messaging.TransportURL.parse(CONF, url))
        transport = messaging.get_rpc_transport(
            CONF, url=url, allowed_remote_exmods=rpc.get_allowed_exmods())
        self._transports.append(transport)
        api = self._factory()
        old = api.client
        # NOTE: the same target, cap and serializer as the client the API
        # made for itself, only on the cell's transport.
        api.client = messaging.get_rpc_client(
            transport, old.target, version_cap=old.version_cap,
            serializer=old.serializer)
        return api

    def cleanup(self):
        """Close the cells' own transports."""
        with self._lock:
            transports, self._transports = self._transports, []
            self._by_url.clear()
            self._default = None
        for transport in transports:
            transport.cleanup()
