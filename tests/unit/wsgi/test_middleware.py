# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The API-neutral middleware: context, request checks, log, outer layers."""

import logging

from oslo_config import cfg
import pytest
import webob

from common.conf import opts
from common.wsgi import middleware


def _echo(environ, start_response):
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [b'ok']


def _error_app(status, message):
    return webob.Response(status=status, body=message.encode())


def _conf(**cors):
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    conf([], default_config_files=[])
    for name, value in cors.items():
        conf.set_override(name, value, group='cors')
    return conf


def test_context_from_headers_and_extra_keys():
    seen = {}

    def app(environ, start_response):
        seen.update(environ)
        return _echo(environ, start_response)

    wrapped = middleware.ContextMiddleware(app, 'test.context',
                                           extra={'test.conf': 'c'})
    webob.Request.blank('/', headers={
        'X-User-Id': 'u', 'X-Project-Id': 'p', 'X-Roles': 'reader'},
    ).get_response(wrapped)
    ctx = seen['test.context']
    assert (ctx.user_id, ctx.project_id, ctx.roles) == ('u', 'p', ['reader'])
    assert seen['test.conf'] == 'c'


@pytest.mark.parametrize('length,ctype,strict,status,message', [
    (None, None, True, 200, b'ok'),
    ('abc', 'application/json', False, 400,
     b'content-length header must be an integer'),
    ('abc', 'application/json', True, 400,
     b'content-length header must be an integer'),
    ('5', '', False, 200, b'ok'),
    ('5', '', True, 400,
     b'content-type header required when content-length is set'),
    ('0', '', True, 200, b'ok'),
    ('5', 'application/json', True, 200, b'ok'),
])
def test_request_checks(length, ctype, strict, status, message):
    app = middleware.RequestChecks(_echo, _error_app,
                                   require_content_type=strict)
    req = webob.Request.blank('/')
    req.environ.pop('CONTENT_LENGTH', None)
    if length is not None:
        req.environ['CONTENT_LENGTH'] = length
    req.environ['CONTENT_TYPE'] = ctype or ''
    resp = req.get_response(app)
    assert (resp.status_int, resp.body) == (status, message)


def test_request_log(caplog):
    app = middleware.RequestLog(_echo, 'test.version')
    req = webob.Request.blank('/things?a=1', environ={
        'test.version': '1.5', 'REMOTE_ADDR': '10.0.0.1'})
    with caplog.at_level(logging.INFO, logger='common.wsgi.middleware'):
        req.get_response(app)
    assert '10.0.0.1 "GET /things?a=1" status: 200 microversion: 1.5' in (
        caplog.text)


def test_outermost_layers():
    app = middleware.outermost(_echo, _conf())
    resp = webob.Request.blank('/x').get_response(app)
    assert resp.body == b'ok'
    assert resp.headers['X-OpenStack-Request-Id'].startswith('req-')
    check = webob.Request.blank('/healthcheck').get_response(app)
    assert check.status_int == 200
    assert check.body != b'ok'
    assert 'Access-Control-Allow-Origin' not in webob.Request.blank(
        '/x', headers={'Origin': 'http://a.example.com'}).get_response(
            app).headers


def test_outermost_adds_cors_when_configured():
    app = middleware.outermost(
        _echo, _conf(allowed_origin=['http://a.example.com']))
    resp = webob.Request.blank(
        '/x', headers={'Origin': 'http://a.example.com'}).get_response(app)
    assert resp.headers['Access-Control-Allow-Origin'] == (
        'http://a.example.com')


@pytest.mark.parametrize('environ,message', [
    ({'PATH_INFO': '/a/\xff'}, b'The path is not valid UTF-8.'),
    ({'PATH_INFO': '/a/\x00'}, b'The path holds a NUL character.'),
    ({'QUERY_STRING': 'name=%ff'}, b'The query string is not valid UTF-8.'),
    ({'QUERY_STRING': 'n=%ed%a0%80'},
     b'The query string is not valid UTF-8.'),
    ({'QUERY_STRING': 'name=a%00'},
     b'The query string holds a NUL character.'),
    ({'HTTP_X_AUTH_TOKEN': 'tok\xff'},
     b'The X-Auth-Token header is not valid UTF-8.'),
])
def test_request_checks_refuse_what_is_not_text(environ, message):
    app = middleware.RequestChecks(_echo, _error_app)
    req = webob.Request.blank('/')
    req.environ.update(environ)
    resp = req.get_response(app)
    assert (resp.status_int, resp.body) == (400, message)


def test_request_checks_take_utf8_text():
    app = middleware.RequestChecks(_echo, _error_app)
    req = webob.Request.blank('/a/%C3%A9?name=%C3%A9+x&b=%2B')
    req.headers['X-Auth-Token'] = 'admin'
    assert req.get_response(app).status_int == 200


def test_placement_refuses_paths_that_are_not_utf8():
    from services.placement import deploy
    conf = _conf()
    conf.set_override('auth_strategy', 'noauth2', group='api')
    app = deploy.loadapp(conf)
    resp = webob.Request.blank('/resource_providers/%ff', headers={
        'X-Auth-Token': 'admin'}).get_response(app)
    assert resp.status_int == 400
    assert 'The path is not valid UTF-8.' in resp.json['errors'][0]['detail']
