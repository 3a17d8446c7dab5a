# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Version negotiation and the middleware that stamps every response."""

import types

import pytest
import webob

from common.wsgi import microversion

V = microversion.Version
MIN, MAX = V(1, 0), V(1, 9)


def _negotiate(text, **kwargs):
    return microversion.negotiate(
        text, MIN, MAX, malformed='bad {text}',
        unacceptable='{text} not in {min}..{max}', **kwargs)


@pytest.mark.parametrize('text,expected', [
    (None, MIN), ('', MIN), ('latest', MAX), ('1.0', MIN), ('1.5', V(1, 5)),
    ('1.9', MAX),
])
def test_negotiate(text, expected):
    assert _negotiate(text) == expected


@pytest.mark.parametrize('text,status,message', [
    ('1.a', 400, 'bad 1.a'),
    ('LATEST', 400, 'bad LATEST'),
    ('1.5.1', 400, 'bad 1.5.1'),
    ('1.10', 406, '1.10 not in 1.0..1.9'),
    ('0.9', 406, '0.9 not in 1.0..1.9'),
])
def test_negotiate_refuses(text, status, message):
    with pytest.raises(microversion.MicroversionError) as info:
        _negotiate(text)
    assert (info.value.status, info.value.message) == (status, message)


def test_negotiate_with_the_api_own_parser_and_latest():
    assert _negotiate(' Latest ', is_latest=lambda t: (
        t.strip().lower() == 'latest')) == MAX
    assert _negotiate('1.3', parser=lambda t: V(1, 4)) == V(1, 4)


@pytest.mark.parametrize('text', ['-1.5', '1.', '1', 'a.b', '1.5x'])
def test_parse_is_strict(text):
    with pytest.raises(ValueError):
        microversion.parse(text)


def test_version():
    assert str(V(2, 10)) == '2.10'
    assert V(1, 14) >= (1, 14) and V(1, 14) < (1, 15)
    assert V(1, 5).matches((1, 0), (1, 5))
    assert not V(1, 5).matches(min_version=(1, 6))
    assert not V(1, 5).matches(max_version=(1, 4))


@pytest.mark.parametrize('value,expected', [
    ('compute 2.60, placement 1.30', '1.30'),
    ('PLACEMENT  1.2 ', '1.2'),
    ('compute 2.60', None),
    ('placement', None),
])
def test_service_value(value, expected):
    assert microversion.service_value(value, 'placement') == expected


def _versions():
    def from_headers(headers):
        return _negotiate(headers.get('x-version'))

    return types.SimpleNamespace(
        ENV_KEY='test.version', MIN_VERSION=MIN, from_headers=from_headers,
        response_headers=lambda v: [('X-Version', str(v)),
                                    ('Vary', 'X-Version')])


def _error_app(status, message):
    return webob.Response(status=status, body=message.encode())


def _app(environ, start_response):
    start_response('200 OK', [('Vary', 'other'), ('X-Version', 'mine'),
                              ('X-Seen', str(environ['test.version']))])
    return [b'ok']


def test_middleware_records_and_stamps_the_version():
    app = microversion.MicroversionMiddleware(_app, _versions(), _error_app)
    resp = webob.Request.blank('/', headers={'X-Version': '1.5'}).get_response(
        app)
    assert resp.status_int == 200
    assert resp.headers['X-Seen'] == '1.5'
    # The application's own Vary and version headers are replaced.
    assert resp.headers.getall('X-Version') == ['1.5']
    assert resp.headers.getall('Vary') == ['X-Version']


def test_middleware_answers_a_refused_version_at_the_minimum():
    app = microversion.MicroversionMiddleware(_app, _versions(), _error_app)
    resp = webob.Request.blank('/', headers={'X-Version': '7.0'}).get_response(
        app)
    assert resp.status_int == 406
    assert resp.body == b'7.0 not in 1.0..1.9'
    assert resp.headers['X-Version'] == '1.0'
