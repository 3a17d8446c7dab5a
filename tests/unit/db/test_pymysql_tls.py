# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""PyMySQL connections share a TLS context per set of ssl options."""

import ssl

from pymysql import connections

from common.db import pymysql_tls


def _context(sslp):
    conn = connections.Connection.__new__(connections.Connection)
    return conn._create_ssl_ctx(sslp)


def test_same_options_share_one_context_with_the_same_settings():
    assert pymysql_tls.install()
    assert pymysql_tls.install()
    preferred = _context({})
    assert _context({}) is preferred
    # NOTE: PyMySQL's "preferred" mode verifies nothing; still so.
    assert preferred.verify_mode == ssl.CERT_NONE
    assert preferred.check_hostname is False


def test_different_options_get_their_own_context():
    pymysql_tls.install()
    verifying = _context({'verify_mode': True, 'check_hostname': False})
    assert verifying is not _context({})
    assert verifying.verify_mode == ssl.CERT_REQUIRED
    given = ssl.create_default_context()
    assert _context(given) is given
