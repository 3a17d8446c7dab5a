# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Placement calls over the client's own keep-alive connections.

A real threaded HTTP server (the one Berth's APIs run) on a free port plays
placement; the client is built from ``[placement]`` options as services
build it.
"""

import json
import shutil
import socket
import struct
import subprocess
import threading
import time

from keystoneauth1 import session as ks_session
from oslo_config import cfg
import pytest

from common.conf import placement as placement_conf
from common.placement import client as placement_client
from common.wsgi import server as wsgi_server


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class FakePlacement(object):
    """Records what reaches it; answers what a test asks."""

    def __init__(self):
        self.seen = []
        self.answer = (200, {'ok': True})
        self.delay = 0

    def __call__(self, environ, start_response):
        length = int(environ.get('CONTENT_LENGTH') or 0)
        body = environ['wsgi.input'].read(length) if length else b''
        self.seen.append({
            'method': environ['REQUEST_METHOD'],
            'path': environ['PATH_INFO'],
            'query': environ.get('QUERY_STRING', ''),
            'port': environ['REMOTE_PORT'],
            'token': environ.get('HTTP_X_AUTH_TOKEN'),
            'version': environ.get('HTTP_OPENSTACK_API_VERSION'),
            'request_id': environ.get('HTTP_X_OPENSTACK_REQUEST_ID'),
            'content_type': environ.get('CONTENT_TYPE'),
            'agent': environ.get('HTTP_USER_AGENT'),
            'body': json.loads(body) if body else None})
        if self.delay:
            time.sleep(self.delay)
        status, data = self.answer
        payload = json.dumps(data).encode()
        start_response('%d X' % status, [
            ('Content-Type', 'application/json'),
            ('Content-Length', str(len(payload)))])
        return [payload]


class Server(object):
    def __init__(self, app, port):
        self.server = wsgi_server.make_server(app, '127.0.0.1', port, 4, 't')
        self.server.prepare()
        self.thread = threading.Thread(target=self.server.serve, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.stop()
        self.thread.join(10)


@pytest.fixture
def fake():
    return FakePlacement()


@pytest.fixture
def port():
    return _free_port()


@pytest.fixture
def server(fake, port):
    running = Server(fake, port)
    yield running
    running.stop()


def _conf(path, port, **extra):
    url = 'http://127.0.0.1:%d/placement' % port
    options = dict({'auth_type': 'admin_token', 'token': 'sekrit',
                    'endpoint_override': url, 'connect_retries': 0,
                    'timeout': 2}, **extra)
    path.write_text('[placement]\n' + ''.join(
        '%s = %s\n' % item for item in options.items()))
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    conf(['--config-file', str(path)], project='berth',
         default_config_files=[])
    return conf


@pytest.fixture
def make_client(monkeypatch, tmp_path, port):
    for name in ('http_proxy', 'https_proxy', 'HTTP_PROXY', 'HTTPS_PROXY',
                 'no_proxy', 'NETRC'):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('HOME', str(tmp_path))

    def _make(**options):
        return placement_client.PlacementClient(
            _conf(tmp_path / 'berth.conf', port, **options))
    return _make


@pytest.fixture
def client(make_client):
    return make_client()


class _Context(object):
    global_id = 'req-5a3b1c2d-0000-4000-8000-000000000001'


def test_calls_reuse_one_connection_and_carry_the_headers(client, fake,
                                                          server):
    first = client.put('/allocations/c1', {'allocations': {}}, '1.38',
                       _Context())
    second = client.get('/traits?name=in:A', '1.39')
    assert (first.status, first.body) == (200, {'ok': True})
    assert second.ok
    put, get = fake.seen
    assert put['port'] == get['port']
    assert put['path'] == '/placement/allocations/c1'
    assert put['method'] == 'PUT'
    assert put['body'] == {'allocations': {}}
    assert put['content_type'] == 'application/json'
    assert put['token'] == 'sekrit'
    assert put['version'] == 'placement 1.38'
    assert put['request_id'] == _Context.global_id
    assert 'keystoneauth1' in put['agent']
    assert (get['path'], get['query']) == ('/placement/traits', 'name=in:A')
    assert client._get_direct() is not None


def test_a_restarted_server_is_reached_again(client, fake, port):
    running = Server(fake, port)
    assert client.get('/', '1.0').ok
    running.stop()
    # NOTE: the kept connection now points at nothing; the next call must
    # notice and open a new one to the new server, not fail.
    running = Server(fake, port)
    try:
        assert client.get('/', '1.0').ok
    finally:
        running.stop()
    assert len(fake.seen) == 2
    assert fake.seen[0]['port'] != fake.seen[1]['port']


class _Resetter(object):
    """A server going away: resets its first connections, then answers."""

    def __init__(self, port, resets):
        self.resets = resets
        self.accepted = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(('127.0.0.1', port))
        self.sock.listen(8)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            with conn:
                request = b''
                while b'\r\n\r\n' not in request:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    request += chunk
                if self.resets > 0:
                    self.resets -= 1
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                    struct.pack('ii', 1, 0))
                    continue
                conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: '
                             b'application/json\r\nContent-Length: 2\r\n'
                             b'Connection: close\r\n\r\n{}')

    def stop(self):
        self.sock.close()
        self.thread.join(10)


def test_a_connection_reset_during_a_restart_is_sent_again(client, fake,
                                                           port):
    running = Server(fake, port)
    assert client.get('/', '1.0').ok
    running.stop()
    # NOTE: the kept connection is gone and the new one is reset before
    # any answer, as when placement restarts: keystoneauth sends it again.
    resetter = _Resetter(port, resets=1)
    try:
        assert client.get('/', '1.0').ok
    finally:
        resetter.stop()
    assert resetter.accepted == 2


def test_server_errors_and_timeouts_are_placement_unavailable(client, fake,
                                                              server):
    fake.answer = (503, {'errors': [{'detail': 'db down'}]})
    with pytest.raises(placement_client.PlacementUnavailable,
                       match='answered 503'):
        client.get('/', '1.0')
    fake.answer = (200, {})
    fake.delay = 3
    with pytest.raises(placement_client.PlacementUnavailable,
                       match='failed'):
        client.get('/slow', '1.0', timeout=0.5)
    # A timed-out connection is not used again.
    fake.delay = 0
    assert client.get('/', '1.0').ok
    assert fake.seen[-1]['port'] != fake.seen[0]['port']


def test_client_errors_are_answers(client, fake, server):
    fake.answer = (409, {'errors': [{'code': 'placement.concurrent_update',
                                     'detail': 'generation conflict'}]})
    resp = client.put('/allocations/c1', {'allocations': {}}, '1.38')
    assert resp.status == 409
    assert resp.error_code() == 'placement.concurrent_update'


def test_unreachable_placement_goes_through_keystoneauth(client):
    # Nothing listens: keystoneauth's connect retries and wording apply.
    with pytest.raises(placement_client.PlacementUnavailable,
                       match='Unable to establish connection'):
        client.get('/', '1.0')


def test_a_rejected_token_is_renewed_by_keystoneauth(client, fake, server,
                                                     monkeypatch):
    invalidated = []
    adapter = client._get_adapter()
    monkeypatch.setattr(adapter, 'invalidate',
                        lambda auth=None: invalidated.append(1) or True)
    sent = []
    real = ks_session.Session.request

    def through_keystoneauth(self, url, method, **kwargs):
        sent.append((method, url))
        fake.answer = (200, {'renewed': True})
        return real(self, url, method, **kwargs)
    monkeypatch.setattr(ks_session.Session, 'request', through_keystoneauth)
    fake.answer = (401, {'errors': [{'detail': 'expired'}]})
    resp = client.get('/resource_providers', '1.14')
    assert resp.body == {'renewed': True}
    assert invalidated == [1]
    assert [m for m, _u in sent] == ['GET']
    assert len(fake.seen) == 2


def test_turned_off_or_behind_a_proxy_uses_keystoneauth(make_client, fake,
                                                        server, monkeypatch):
    turned_off = make_client(direct_http=False)
    assert turned_off.get('/', '1.0').ok
    assert turned_off._get_direct() is None
    monkeypatch.setenv('https_proxy', 'http://proxy.example:3128')
    assert make_client()._get_direct() is None


@pytest.mark.skipif(shutil.which('openssl') is None, reason='needs openssl')
def test_tls_uses_the_configured_ca(make_client, fake, port, tmp_path):
    from cheroot.ssl import builtin

    cert, key = tmp_path / 'cert.pem', tmp_path / 'key.pem'
    subprocess.run(
        ['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes',
         '-days', '1', '-subj', '/CN=127.0.0.1', '-addext',
         'subjectAltName=IP:127.0.0.1', '-keyout', str(key), '-out',
         str(cert)], check=True, capture_output=True)
    server = wsgi_server.make_server(fake, '127.0.0.1', port, 2, 't')
    server.ssl_adapter = builtin.BuiltinSSLAdapter(str(cert), str(key))
    server.prepare()
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        url = 'https://127.0.0.1:%d/placement' % port
        client = make_client(endpoint_override=url, cafile=str(cert))
        assert client.get('/', '1.0').ok
        assert client.get('/', '1.0').ok
        conn = client._get_direct()._local.conn
        assert conn.sock.version().startswith('TLS')
        assert fake.seen[0]['port'] == fake.seen[1]['port']
        # Without the CA the server is not trusted, whichever path.
        untrusted = make_client(endpoint_override=url)
        with pytest.raises(placement_client.PlacementUnavailable):
            untrusted.get('/', '1.0')
    finally:
        server.stop()
        thread.join(10)
