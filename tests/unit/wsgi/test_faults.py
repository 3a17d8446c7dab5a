# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The fault middleware: API errors, policy denials and the unexpected."""

import json
import logging

import pytest
import webob

from common import policy as common_policy
from common.wsgi import faults


class MyError(faults.HTTPError):
    pass


class NotFound(MyError):
    status = 404


def _fault_app(error):
    def app(environ, start_response):
        body = json.dumps({'status': error.status,
                           'message': error.message}).encode()
        return faults.respond(start_response, error.status,
                              'application/json', body, error.headers)
    return app


def _wrapped(exc):
    def app(environ, start_response):
        raise exc
    return faults.FaultWrapper(app, MyError, _fault_app,
                               lambda environ, e: 'oops: %s' % e)


def _call(app):
    resp = webob.Request.blank('/x').get_response(app)
    return resp.status, json.loads(resp.body), resp.headers


def test_api_error_is_rendered_with_its_headers():
    status, body, headers = _call(_wrapped(
        MyError('no', status=405, headers={'Allow': 'GET'})))
    assert status == '405 Method Not Allowed'
    assert body == {'status': 405, 'message': 'no'}
    assert headers['Allow'] == 'GET'
    assert headers['Content-Length'] == str(len(json.dumps(body)))


def test_subclass_status():
    assert _call(_wrapped(NotFound('gone')))[:2] == (
        '404 Not Found', {'status': 404, 'message': 'gone'})


def test_policy_denial_is_403():
    denial = common_policy.PolicyNotAuthorized('rule:x', {}, {})
    status, body, _ = _call(_wrapped(denial))
    assert status == '403 Forbidden'
    assert body == {'status': 403, 'message': str(denial)}


def test_unexpected_error_is_logged_and_500(caplog):
    with caplog.at_level(logging.ERROR, logger='common.wsgi.faults'):
        status, body, _ = _call(_wrapped(RuntimeError('boom')))
    assert status == '500 Internal Server Error'
    assert body == {'status': 500, 'message': 'oops: boom'}
    assert 'Unexpected error serving GET /x' in caplog.text


@pytest.mark.parametrize('status,line', [
    (429, '429 Too Many Requests'), (418, '418 '),
])
def test_status_line(status, line):
    seen = []
    body = faults.respond(lambda s, h: seen.append((s, h)), status,
                          'text/plain', b'abc', {'X-A': '1'})
    assert body == [b'abc']
    assert seen == [(line, [('Content-Type', 'text/plain'),
                            ('Content-Length', '3'), ('X-A', '1')])]


def test_http_error_defaults():
    error = NotFound()
    assert (error.status, error.message, error.headers) == (404, '', {})
    assert error.args == ('',)
