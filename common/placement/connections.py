# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Placement requests over this process's own keep-alive connections.

keystoneauth, requests and urllib3 together spend about a millisecond of
CPU on each call before a byte is sent: endpoint filters, header merging,
hooks, cookie jars, retry wrappers. The scheduler makes two or three
placement calls per request, so that was a tenth of scheduling a
thousand-host cloud. This module sends the common case straight over
``http.client``, one connection per thread, and leaves everything unusual
to keystoneauth:

* the endpoint, the token and the TLS settings still come from the
  keystoneauth session and adapter (read when a connection is opened, the
  token on every call, so a renewed token is used at once);
* a connection that cannot be opened or a 401 (the token is then
  invalidated) make the caller send the request through keystoneauth
  instead, with its retries, re-authentication and error messages (and
  :class:`common.placement.client.PlacementClient` never comes here when a
  proxy or a .netrc file is configured);
* a kept-alive connection that the server closed meanwhile is reopened and
  the request sent again, once; a new connection that is dropped before
  any answer (a server restarting) hands the request to keystoneauth.
"""

import http.client
import logging
import socket
import ssl
import threading
import urllib.parse

from keystoneauth1 import exceptions as ks_exc

LOG = logging.getLogger(__name__)

# NOTE: what a kept-alive connection raises when the server closed it
# while it sat idle (cheroot closes idle connections after a minute).
_STALE = (http.client.RemoteDisconnected, BrokenPipeError,
          ConnectionResetError, http.client.CannotSendRequest)


class Unsuitable(Exception):
    """This request must go through keystoneauth (see the module doc)."""


class DirectConnections(object):
    """Per-thread keep-alive connections to the adapter's endpoint.

    :param adapter: the keystoneauth Adapter the client uses otherwise.
    :param user_agent: the User-Agent header to send.
    """

    def __init__(self, adapter, user_agent):
        self._adapter = adapter
        self._user_agent = user_agent
        self._local = threading.local()
        self._lock = threading.Lock()
        self._target = None

    def _endpoint(self):
        """(scheme, host, port, path prefix) of placement, looked up once."""
        target = self._target
        if target is not None:
            return target
        with self._lock:
            if self._target is None:
                try:
                    endpoint = self._adapter.get_endpoint()
                except ks_exc.ClientException as exc:
                    raise Unsuitable('endpoint: %s' % exc)
                if not endpoint:
                    raise Unsuitable('no placement endpoint')
                parts = urllib.parse.urlsplit(endpoint)
                if parts.scheme not in ('http', 'https') or \
                        not parts.hostname:
                    raise Unsuitable('endpoint %s' % endpoint)
                self._target = (parts.scheme, parts.hostname, parts.port,
                                parts.path.rstrip('/'))
            return self._target

    def _tls_context(self):
        session = self._adapter.session
        verify = session.verify
        context = ssl.create_default_context(
            cafile=verify if isinstance(verify, str) else None)
        if verify is False:
            # NOTE: [placement] insecure, as keystoneauth honours it.
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        cert = session.cert
        if isinstance(cert, (tuple, list)):
            context.load_cert_chain(cert[0], cert[1])
        elif cert:
            context.load_cert_chain(cert)
        return context

    def _connect(self, timeout):
        scheme, host, port, _prefix = self._endpoint()
        if scheme == 'https':
            conn = http.client.HTTPSConnection(
                host, port, timeout=timeout, context=self._tls_context())
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            conn.connect()
        except OSError as exc:
            # NOTE: keystoneauth retries connections ([placement]
            # connect_retries) and words the failure; let it. The endpoint
            # is looked up again next time, in case the catalog moved it.
            self._target = None
            raise Unsuitable('connect: %s' % exc)
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def request(self, method, url, headers, body, timeout):
        """Send one request; return (status, headers, body bytes).

        :param url: path and query below the endpoint, e.g. '/traits'.
        :param body: bytes or None.
        :raises Unsuitable: send it through keystoneauth instead.
        :raises OSError: the request failed after it was sent (a timeout,
            a connection lost mid-answer).
        """
        try:
            auth = self._adapter.session.get_auth_headers(self._adapter.auth)
        except ks_exc.ClientException as exc:
            raise Unsuitable('auth: %s' % exc)
        if auth is None:
            raise Unsuitable('no auth headers')
        headers = dict(headers, **auth)
        headers['User-Agent'] = self._user_agent
        path = self._endpoint()[3] + url
        conn = self._local.__dict__.pop('conn', None)
        if conn is not None:
            try:
                conn.sock.settimeout(timeout)
                response = self._exchange(conn, method, path, headers, body)
            except _STALE:
                # NOTE: the server dropped the kept-alive connection before
                # reading this request; a new connection sends it again.
                # Every placement POST is guarded by a unique name or a
                # generation, so even a request a dying server did read
                # cannot be applied twice.
                conn.close()
                LOG.debug('Placement closed an idle connection; reconnecting')
                conn = None
            except BaseException:
                conn.close()
                raise
        if conn is None:
            conn = self._connect(timeout)
            try:
                response = self._exchange(conn, method, path, headers, body)
            except _STALE as exc:
                # NOTE: a new connection dropped before any answer: the
                # server is going away (a restart). keystoneauth sends it
                # again with its connect retries, as for a refused one.
                conn.close()
                raise Unsuitable('connection lost before an answer: %s'
                                 % exc)
            except BaseException:
                conn.close()
                raise
        status, reply_headers, content, keep = response
        # NOTE: taken out of the thread's slot while in use, so that an
        # error anywhere above leaves no half-used connection behind.
        if keep:
            self._local.conn = conn
        else:
            conn.close()
        if status == 401:
            # NOTE: an expired or revoked token: keystoneauth fetches a new
            # one and sends the request again.
            self._adapter.invalidate()
            raise Unsuitable('401 from placement')
        return status, reply_headers, content

    @staticmethod
    def _exchange(conn, method, path, headers, body):
        if body is not None:
            headers['Content-Type'] = 'application/json'
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        content = response.read()
        return (response.status, response.headers, content,
                not response.will_close)
