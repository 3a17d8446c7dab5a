# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Rule documentation, the process-wide enforcer and the handlers' check."""

from oslo_config import cfg
from oslo_policy import policy
import pytest

from common import context
from common.wsgi import policy as wsgi_policy

LEGACY = policy.DeprecatedRule(name='test:legacy', check_str='role:admin',
                               deprecated_reason='test',
                               deprecated_since='2023.1')


class Forbidden(Exception):
    pass


def _rules():
    return [wsgi_policy.documented_rule(
        'test:read', 'role:reader', 'Read things.',
        [('GET', '/things'), ('GET', '/things/{id}')])]


def _conf():
    conf = cfg.ConfigOpts()
    conf([], default_config_files=[])
    return conf


def _ctx(*roles):
    return context.RequestContext(user_id='u', project_id='p',
                                  roles=list(roles))


def test_documented_rule():
    rule = wsgi_policy.documented_rule(
        'test:write', 'role:admin', 'Write things.', [('PUT', '/t')],
        deprecated_rule=LEGACY)
    assert rule.operations == [{'method': 'PUT', 'path': '/t'}]
    assert rule.scope_types == ['project']
    # NOTE: oslo.policy keeps a copy of the deprecated rule.
    assert rule.deprecated_rule.name == 'test:legacy'
    assert _rules()[0].deprecated_rule is None


def test_enforcer_holder_keeps_one_until_reset():
    holder = wsgi_policy.EnforcerHolder(_rules)
    conf = _conf()
    first = holder.get(conf)
    assert holder.get(_conf()) is first
    holder.reset()
    assert holder.get(conf) is not first
    holder.reset()
    holder.reset()


def test_authorize():
    enforcer = wsgi_policy.EnforcerHolder(_rules).get(_conf())
    check = dict(enforcer=enforcer, action='test:read', target=None,
                 denied=Forbidden, message='No %s for you.')
    assert wsgi_policy.authorize(_ctx('reader'), **check) is True
    assert wsgi_policy.authorize(_ctx('member'), fatal=False,
                                 **check) is False
    with pytest.raises(Forbidden) as info:
        wsgi_policy.authorize(_ctx('member'), **check)
    assert str(info.value) == 'No test:read for you.'
