# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Requests read whole in the selector thread, within their limits."""

import contextlib
import http.client
import re
import socket
import threading
import time

import pytest

from common.wsgi import connections
from common.wsgi import server

UPLOAD = re.compile(rb'PUT /upload$')


def _limits(**kwargs):
    values = dict(header_timeout=0.5, body_timeout=0.5, idle_timeout=30,
                  max_header_size=2048, max_body_size=4096,
                  max_connections=512, stream_paths=UPLOAD)
    values.update(kwargs)
    return connections.Limits(**values)


def _judge(data, limits=None, incoming=None):
    incoming = incoming or connections._Incoming()
    incoming.buf += data
    return connections.judge(incoming, limits or _limits())


GET = b'GET /x HTTP/1.1\r\nHost: h\r\n\r\n'


@pytest.mark.parametrize('data,verdict', [
    (b'', connections.WAIT),
    (b'GET /x HTTP/1.1\r\nHost: h\r\n', connections.WAIT),
    (GET, connections.DISPATCH),
    # cheroot answers bare LF line ends with a 400 itself.
    (b'GET /x HTTP/1.1\nHost: h\n\n', connections.DISPATCH),
    (b'GET /x HTTP/1.1\r\nX: ' + b'a' * 3000,
     connections.HEADERS_TOO_LARGE),
    (b'GET /x HTTP/1.1\r\nX: ' + b'a' * 3000 + b'\r\n\r\n',
     connections.HEADERS_TOO_LARGE),
    (b'POST /x HTTP/1.1\r\nContent-Length: 3\r\n\r\nab', connections.WAIT),
    (b'POST /x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc',
     connections.DISPATCH),
    (b'POST /x HTTP/1.1\r\ncontent-length: 4097\r\n\r\n',
     connections.TOO_LARGE),
    (b'POST /x HTTP/1.1\r\nContent-Length: 100000000000\r\n\r\nabc',
     connections.TOO_LARGE),
    (b'POST /x HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n',
     connections.BAD_LENGTH),
    (b'POST /x HTTP/1.1\r\nContent-Length: x\r\n\r\n',
     connections.BAD_LENGTH),
    (b'POST /x HTTP/1.1\r\nContent-Length: -5\r\n\r\n',
     connections.BAD_LENGTH),
    (b'POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n',
     connections.NO_LENGTH),
    (b'POST /x HTTP/1.1\r\nContent-Length: 9\r\nExpect: 100-continue\r\n\r\n',
     connections.WAIT),
    (b'POST /x HTTP/1.1\r\nContent-Length: 5000\r\n'
     b'Expect: 100-continue\r\n\r\n', connections.TOO_LARGE),
    (b'PUT /upload HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n',
     connections.DISPATCH),
    (b'PUT /upload?x=1 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n',
     connections.DISPATCH),
    (b'POST /upload HTTP/1.1\r\nContent-Length: 99999\r\n\r\n',
     connections.TOO_LARGE),
])
def test_judge(data, verdict):
    assert _judge(data) == verdict


def test_judge_a_trickle_as_the_whole():
    """Byte by byte, the verdict comes with the last byte, not before."""
    request = b'POST /x HTTP/1.1\r\nContent-Length: 2\r\n\r\nok'
    incoming = connections._Incoming()
    verdicts = [_judge(request[i:i + 1], incoming=incoming)
                for i in range(len(request))]
    assert verdicts == [connections.WAIT] * (len(request) - 1) + [
        connections.DISPATCH]


def _app(environ, start_response):
    if environ['QUERY_STRING'] == 'deny':
        start_response('401 Unauthorized', [('Content-Length', '0')])
        return [b'']
    body = environ['wsgi.input'].read()
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [b'got %d' % len(body)]


@contextlib.contextmanager
def _serving(threads=2, **kwargs):
    srv = server.make_server(_app, '127.0.0.1', 0, threads, 'berth-test',
                             _limits(**kwargs))
    srv.prepare()
    thread = threading.Thread(target=srv.serve, daemon=True)
    thread.start()
    socks = []

    def connect(data=b''):
        sock = socket.create_connection(srv.bind_addr, timeout=10)
        socks.append(sock)
        if data:
            sock.sendall(data)
        return sock

    try:
        yield srv.bind_addr[1], connect
    finally:
        for sock in socks:
            sock.close()
        srv.stop()
        thread.join(10)


def _get(port, path='/', body=None, method=None, timeout=2):
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=timeout)
    try:
        conn.request(method or ('POST' if body else 'GET'), path, body=body)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _response(sock):
    data = b''
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            return data
        data += chunk


def test_idle_slow_and_lying_clients_hold_no_thread():
    with _serving(threads=2, header_timeout=30, body_timeout=30) as (
            port, connect):
        for _ in range(20):
            connect()
            connect(b'GET / HTTP/1.1\r\nHost: h\r\n')
            connect(b'POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\nab')
        started = time.monotonic()
        assert _get(port) == (200, b'got 0')
        assert _get(port, body=b'x' * 4000) == (200, b'got 4000')
        assert time.monotonic() - started < 1


def test_late_headers_and_bodies_are_answered_408():
    with _serving() as (port, connect):
        slow = connect(b'GET / HTTP/1.1\r\nHost: h\r\n')
        lying = connect(b'POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nab')
        started = time.monotonic()
        assert _response(slow).startswith(b'HTTP/1.1 408 ')
        assert _response(lying).startswith(b'HTTP/1.1 408 ')
        assert time.monotonic() - started < 3


def test_header_deadline_holds_against_a_steady_trickle():
    with _serving() as (port, connect):
        sock = connect(b'GET / HTTP/1.1\r\n')
        started = time.monotonic()
        with pytest.raises(OSError):
            for _ in range(40):
                sock.sendall(b'X: y\r\n')
                time.sleep(0.1)
        assert time.monotonic() - started < 2.5
        assert b'408' in _response(sock)


@pytest.mark.parametrize('length', [4097, 268435456, 100000000000])
def test_oversized_bodies_are_refused_at_once(length):
    with _serving() as (port, connect):
        sock = connect(b'POST / HTTP/1.1\r\nContent-Length: %d\r\n\r\nab'
                       % length)
        sock.settimeout(1)
        assert _response(sock).startswith(b'HTTP/1.1 413 ')
        assert _get(port) == (200, b'got 0')


def test_large_headers_and_chunked_bodies_are_refused():
    with _serving() as (port, connect):
        big = connect(b'GET / HTTP/1.1\r\nX: ' + b'a' * 3000)
        chunked = connect(b'POST / HTTP/1.1\r\nTransfer-Encoding: chunked'
                          b'\r\n\r\n2\r\nab\r\n0\r\n\r\n')
        assert _response(big).startswith(b'HTTP/1.1 431 ')
        assert _response(chunked).startswith(b'HTTP/1.1 411 ')


def test_expect_continue_bodies_are_read_before_a_worker_sees_them():
    with _serving(threads=1, header_timeout=30, body_timeout=30) as (
            port, connect):
        waiting = [connect(b'POST / HTTP/1.1\r\nContent-Length: 5\r\n'
                           b'Expect: 100-continue\r\n\r\n')
                   for _ in range(4)]
        for sock in waiting:
            assert sock.recv(64) == b'HTTP/1.1 100 Continue\r\n\r\n'
        assert _get(port) == (200, b'got 0')
        waiting[0].sendall(b'hello')
        answer = waiting[0].recv(4096)
        while b'got 5' not in answer:
            answer += waiting[0].recv(4096)
        assert b'200 OK' in answer


def test_upload_paths_stream_bodies_of_any_size():
    with _serving() as (port, connect):
        body = b'x' * 100000
        assert _get(port, '/upload', body=body, method='PUT') == (
            200, b'got 100000')
        assert _get(port, '/other', body=body, method='PUT')[0] == 413


def test_an_upload_refused_unread_closes_rather_than_drains():
    with _serving() as (port, connect):
        sock = connect(b'PUT /upload?deny HTTP/1.1\r\n'
                       b'Content-Length: 100000000000\r\n\r\nab')
        sock.settimeout(2)
        answer = _response(sock)
        assert answer.startswith(b'HTTP/1.1 401 ')
        assert b'Connection: close' in answer
        small = connect(b'PUT /upload?deny HTTP/1.1\r\n'
                        b'Content-Length: 10\r\n\r\n0123456789'
                        b'GET / HTTP/1.1\r\nConnection: close\r\n\r\n')
        assert _response(small).count(b'HTTP/1.1 ') == 2


def test_keep_alive_and_pipelined_requests():
    with _serving() as (port, connect):
        conn = http.client.HTTPConnection('127.0.0.1', port, timeout=5)
        try:
            for size in (0, 10, 4000):
                conn.request('POST', '/', body=b'y' * size)
                response = conn.getresponse()
                assert response.read() == b'got %d' % size
                assert not response.will_close
        finally:
            conn.close()
        sock = connect(GET + GET + b'GET / HTTP/1.1\r\nHost: h\r\n'
                       b'Connection: close\r\n\r\n')
        assert _response(sock).count(b'HTTP/1.1 200 OK') == 3


def test_idle_connections_expire():
    with _serving(idle_timeout=0.5) as (port, connect):
        sock = connect()
        started = time.monotonic()
        assert _response(sock) == b''
        assert time.monotonic() - started < 3


def test_a_new_client_takes_the_place_of_the_oldest_idle_one():
    with _serving(max_connections=16) as (port, connect):
        idle = [connect() for _ in range(16)]
        time.sleep(0.2)
        assert _get(port) == (200, b'got 0')
        assert _response(idle[0]) == b''


def test_without_idle_connections_a_client_over_the_limit_gets_503():
    with _serving(max_connections=16, header_timeout=30) as (
            port, connect):
        for _ in range(16):
            connect(b'GET / HTTP/1.1\r\n')
        time.sleep(0.2)
        assert _response(connect()).startswith(b'HTTP/1.1 503 ')


def test_main_serves_with_the_group_limits(monkeypatch):
    from oslo_config import cfg

    from common.conf import api as api_conf
    from common import config
    from common import preflight

    def parse_args(args, cli_opts=()):
        conf = cfg.ConfigOpts()
        conf.register_cli_opts(cli_opts)
        api_conf.register_opts(conf)
        conf(args, default_config_files=[])
        conf.set_override('header_timeout', 3, group='api')
        conf.set_override('max_request_body_size', 2048, group='api')
        return conf

    served = []
    monkeypatch.setattr(config, 'parse_args', parse_args)
    monkeypatch.setattr(config, 'setup_logging', lambda name: None)
    # NOTE: a bare ConfigOpts has no database or transport options.
    monkeypatch.setattr(preflight, 'check', lambda conf, binary: None)
    monkeypatch.setattr(server, 'serve',
                        lambda srv, name: served.append(srv) or 0)
    assert server.main('berth-api', 'api', lambda conf: _app, []) == 0
    limits = served[0].limits
    assert (limits.header_timeout, limits.body_timeout,
            limits.idle_timeout, limits.max_header_size,
            limits.max_body_size, limits.max_connections) == (
        3, 10, 60, 65536, 2048, 512)
    assert limits.stream_paths.match(b'PUT /image/v2/images/abc/file')
    assert not limits.stream_paths.match(b'POST /image/v2/images')
