# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The route table lookup, with placement's rules and with Nova's."""

import pytest

from common.wsgi import router
from services.api import router as api_router


class NotFound(Exception):
    pass


class NotAllowed(Exception):
    pass


def show(req):
    return 'show'


def index(req):
    return 'index'


def create(req):
    return 'create'


def detail(req):
    return 'detail'


TABLE = {
    '/': {'GET': index},
    '/things': {'GET': index, 'POST': create},
    '/things/detail': {'GET': detail},
    '/things/{thing_id}': {'GET': show},
}


def _router(cls=router.Router):
    return cls(TABLE, NotFound, NotAllowed)


@pytest.mark.parametrize('method,path,handler,urlvars', [
    ('GET', '/', index, {}),
    ('GET', '', index, {}),
    ('POST', '/things', create, {}),
    # An exact template wins over a pattern that also matches.
    ('GET', '/things/detail', detail, {}),
    ('GET', '/things/abc', show, {'thing_id': 'abc'}),
])
def test_matches(method, path, handler, urlvars):
    for cls in (router.Router, api_router.Router):
        assert _router(cls).handler_for(method, path) == (handler, urlvars)


@pytest.mark.parametrize('path', ['/nope', '/things/a/b', '/things/'])
def test_unknown_path_is_not_found(path):
    with pytest.raises(NotFound):
        _router().handler_for('GET', path)


def test_other_method_names_the_allowed_ones():
    with pytest.raises(NotAllowed) as info:
        _router().handler_for('DELETE', '/things')
    assert info.value.args == ('GET, POST',)


def test_head_is_not_get_by_default():
    with pytest.raises(NotAllowed):
        _router().handler_for('HEAD', '/things/x')


def test_nova_rules_ignore_a_trailing_slash_and_serve_head():
    routes = _router(api_router.Router)
    assert routes.handler_for('GET', '/things/') == (index, {})
    assert routes.handler_for('HEAD', '/things/x/') == (
        show, {'thing_id': 'x'})
    with pytest.raises(NotAllowed):
        routes.handler_for('PUT', '/things/x')
