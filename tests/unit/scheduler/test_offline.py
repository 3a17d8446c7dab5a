# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The offline pipeline: fast, one-line failures for an unreachable cloud.
"""

import socket
import threading
import time
import types

import pytest

from services.scheduler import offline


def _conf(api, cell=None, placement=None):
    return types.SimpleNamespace(
        api_database=types.SimpleNamespace(connection=api),
        database=types.SimpleNamespace(connection=cell),
        placement=types.SimpleNamespace(endpoint_override=placement,
                                        endpoint=None))


def _closed_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def test_missing_sqlite_file_and_closed_ports_fail_fast(tmp_path):
    with pytest.raises(offline.Unreachable, match='does not exist'):
        offline.check_reachable(_conf('sqlite:///%s/no.sqlite' % tmp_path))
    port = _closed_port()
    started = time.monotonic()
    with pytest.raises(offline.Unreachable,
                       match='the api database at 127.0.0.1:%d' % port):
        offline.check_reachable(_conf(
            'mysql+pymysql://root@127.0.0.1:%d/x' % port))
    db = tmp_path / 'api.sqlite'
    db.write_text('')
    with pytest.raises(offline.Unreachable, match='placement at'):
        offline.check_reachable(_conf('sqlite:///%s' % db, placement=(
            'http://127.0.0.1:%d' % port)))
    assert time.monotonic() - started < offline.PROBE_TIMEOUT * 2
    offline.check_reachable(_conf('sqlite:///%s' % db))


def test_mysql_that_drops_the_connection_is_unreachable():
    server = socket.socket()
    server.bind(('127.0.0.1', 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        def drop():
            conn, _a = server.accept()
            conn.close()
        threading.Thread(target=drop, daemon=True).start()
        with pytest.raises(offline.Unreachable, match='unreachable'):
            offline.check_reachable(_conf(
                'mysql+pymysql://root@127.0.0.1:%d/x' % port))
    finally:
        server.close()
