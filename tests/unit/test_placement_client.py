# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The placement client reads the environment once, not on every call."""

from keystoneauth1 import session as ks_session
import pytest

from common.placement import client as placement_client

_ENV = ('http_proxy', 'HTTPS_PROXY', 'no_proxy', 'NETRC',
        'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE')


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('HOME', str(tmp_path))
    return monkeypatch


def test_nothing_to_find_turns_the_lookups_off(clean_env):
    session = ks_session.Session()
    placement_client.skip_environment_lookups(session)
    assert session.session.trust_env is False
    assert session.verify is True


def test_a_ca_bundle_is_read_once(clean_env):
    clean_env.setenv('REQUESTS_CA_BUNDLE', '/etc/pki/bundle.pem')
    session = ks_session.Session()
    placement_client.skip_environment_lookups(session)
    assert session.session.trust_env is False
    assert session.verify == '/etc/pki/bundle.pem'
    # An explicit [placement] cafile or insecure is kept.
    explicit = ks_session.Session(verify='/etc/berth/ca.pem')
    placement_client.skip_environment_lookups(explicit)
    assert explicit.verify == '/etc/berth/ca.pem'


@pytest.mark.parametrize('name', ['https_proxy', 'HTTPS_PROXY', 'NETRC'])
def test_proxies_or_netrc_keep_the_lookups(clean_env, name):
    clean_env.setenv(name, 'http://proxy.example:3128')
    session = ks_session.Session()
    placement_client.skip_environment_lookups(session)
    assert session.session.trust_env is True


def test_a_netrc_file_keeps_the_lookups(clean_env, tmp_path):
    (tmp_path / '.netrc').write_text('machine placement login x\n')
    session = ks_session.Session()
    placement_client.skip_environment_lookups(session)
    assert session.session.trust_env is True
