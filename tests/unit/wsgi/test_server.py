# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The API servers' cheroot server, main loop and listen options."""

import http.client
import os
import signal
import threading
import time
import urllib.request

from oslo_config import cfg
import pytest

from common.conf import _http_server
from common import config
from common.wsgi import server

GROUP_OPTS = [cfg.HostAddressOpt('bind_host', default='0.0.0.0'),
              cfg.PortOpt('bind_port', default=8999),
              cfg.IntOpt('threads', default=3)] + \
    _http_server.server_opts('berth-test')


def _app(environ, start_response):
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [b'hello']


def test_make_server():
    srv = server.make_server(_app, '127.0.0.1', 0, 4, 'berth-test')
    assert srv.bind_addr == ('127.0.0.1', 0)
    assert srv.requests.min == 4
    assert srv.request_queue_size == 128
    assert srv.timeout == 5
    assert srv.server_name == 'berth-test'
    assert srv.max_request_header_size == 65536
    assert srv.keep_alive_conn_limit == 512


def test_many_clients_keep_their_connections():
    srv = server.make_server(_app, '127.0.0.1', 0, 2, 'berth-test')
    srv.prepare()
    thread = threading.Thread(target=srv.serve, daemon=True)
    thread.start()
    conns = [http.client.HTTPConnection('127.0.0.1', srv.bind_addr[1],
                                        timeout=10) for _ in range(30)]
    try:
        closing = 0
        for _ in range(2):
            for conn in conns:
                conn.request('GET', '/')
                response = conn.getresponse()
                assert response.read() == b'hello'
                closing += response.will_close
        assert closing == 0
    finally:
        for conn in conns:
            conn.close()
        srv.stop()
        thread.join(10)


def test_serve_answers_and_stops_on_sigterm(capsys):
    srv = server.make_server(_app, '127.0.0.1', 0, 2, 'berth-test')
    answers = []

    def client():
        deadline = time.monotonic() + 10
        while not srv.ready and time.monotonic() < deadline:
            time.sleep(0.01)
        url = 'http://127.0.0.1:%d/' % srv.bind_addr[1]
        with urllib.request.urlopen(url, timeout=10) as resp:
            answers.append(resp.read())
        os.kill(os.getpid(), signal.SIGTERM)

    saved = {sig: signal.getsignal(sig)
             for sig in (signal.SIGTERM, signal.SIGINT)}
    thread = threading.Thread(target=client, daemon=True)
    thread.start()
    try:
        assert server.serve(srv, 'berth-test') == 0
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    thread.join(10)
    assert answers == [b'hello']
    assert 'berth-test serving on http://127.0.0.1:' in capsys.readouterr().out


@pytest.mark.parametrize('argv,host,port', [
    ([], '0.0.0.0', 8999),
    (['--host', '127.0.0.2'], '127.0.0.2', 8999),
    (['--port', '0'], '0.0.0.0', 0),
])
def test_main_listens_where_told(monkeypatch, argv, host, port):
    def parse_args(args, cli_opts=()):
        conf = cfg.ConfigOpts()
        conf.register_cli_opts(cli_opts)
        conf.register_opts(GROUP_OPTS, group='test_api')
        conf(args, default_config_files=[])
        return conf

    served = []
    monkeypatch.setattr(config, 'parse_args', parse_args)
    monkeypatch.setattr(config, 'setup_logging', lambda name: None)
    monkeypatch.setattr(server, 'serve',
                        lambda srv, name: served.append((srv, name)) or 0)
    assert server.main('berth-test', 'test_api', lambda conf: _app,
                       argv) == 0
    srv, name = served[0]
    assert (srv.bind_addr, srv.requests.min, name) == (
        (host, port), 3, 'berth-test')


def test_cli_opts_name_their_group():
    host, port = server.cli_opts('placement_api')
    assert (host.dest, port.dest) == ('listen_host', 'port')
    assert '[placement_api] bind_host' in host.help
    assert '[placement_api] bind_port' in port.help


def test_the_all_in_one_serves_with_the_same_bounded_server():
    from common.wsgi import connections
    from services.allinone import launcher

    limits = connections.Limits(header_timeout=2)
    http = launcher.HTTPServer('berth-test', _app, '127.0.0.1', 0, 2,
                               limits=limits)
    assert isinstance(http._server, server.Server)
    assert http._server.limits is limits
    assert http._server.requests.min == 2
