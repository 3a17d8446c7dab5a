# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""common.policy remembers decisions without ever changing one."""

import os

from oslo_config import cfg
from oslo_policy import _checks
from oslo_policy import opts as policy_opts
from oslo_policy import policy as oslo_policy
import pytest

from common import context
from common import policy

ACTION = 'test:thing'
OWNER = 'test:owner'


def _rules():
    return [
        oslo_policy.RuleDefault(ACTION, 'role:admin'),
        oslo_policy.RuleDefault(OWNER, 'project_id:%(project_id)s'),
    ]


@pytest.fixture
def policy_file(tmp_path):
    path = tmp_path / 'policy.yaml'
    path.write_text('{}\n')
    return path


@pytest.fixture
def enforcer(policy_file, monkeypatch):
    conf = cfg.ConfigOpts()
    policy_opts.set_defaults(conf, policy_file=str(policy_file))
    conf([], default_config_files=[])
    calls = []
    real = oslo_policy.Enforcer.enforce

    def counting(self, rule, *args, **kwargs):
        calls.append(rule)
        return real(self, rule, *args, **kwargs)

    monkeypatch.setattr(oslo_policy.Enforcer, 'enforce', counting)
    enforcer = policy.Enforcer(conf, _rules)
    enforcer.calls = calls
    yield enforcer
    enforcer.reset()


def _ctx(roles, project='p1', user='u1'):
    return context.RequestContext(user_id=user, project_id=project,
                                  roles=roles)


def _target(project='p1'):
    return {'project_id': project, 'user_id': 'u1'}


def _write(path, text):
    """Rewrite a policy file so that its mtime surely moves on."""
    stat = os.stat(path)
    path.write_text(text)
    os.utime(path, (stat.st_atime + 10, stat.st_mtime + 10))


def test_repeated_decision_is_cached(enforcer):
    for _ in range(3):
        assert enforcer.authorize(_ctx(['admin']), ACTION, _target())
        assert not enforcer.authorize(_ctx(['member']), ACTION, _target(),
                                      fatal=False)
    assert enforcer.calls == [ACTION, ACTION]


def test_cached_denial_still_raises_when_fatal(enforcer):
    for _ in range(2):
        with pytest.raises(policy.PolicyNotAuthorized):
            enforcer.authorize(_ctx(['member']), ACTION, _target())
    assert len(enforcer.calls) == 1


def test_credentials_are_not_confused(enforcer):
    cases = [
        (_ctx(['admin']), ACTION, _target(), True),
        (_ctx(['member']), ACTION, _target(), False),
        (_ctx(['member', 'admin']), ACTION, _target(), True),
        (_ctx([]), ACTION, _target(), False),
        (_ctx(['member'], project='p1'), OWNER, _target('p1'), True),
        (_ctx(['member'], project='p2'), OWNER, _target('p1'), False),
        (_ctx(['member'], project='p2'), OWNER, _target('p2'), True),
        (_ctx(['member'], project=None), OWNER, _target('p1'), False),
    ]
    for _ in range(3):
        for ctx, action, target, expected in cases:
            assert enforcer.authorize(ctx, action, target,
                                      fatal=False) is expected


def test_values_are_compared_with_their_types(enforcer):
    # NOTE: True == 1 and hash(True) == hash(1): a cache keyed on plain
    # values would give one caller the other's answer.
    as_int = {'project_id': 1, 'user_id': 'u1'}
    as_bool = {'project_id': True, 'user_id': 'u1'}
    ctx = _ctx(['member'], project='1')
    assert not enforcer.authorize(ctx, OWNER, as_bool, fatal=False)
    assert enforcer.authorize(ctx, OWNER, as_int, fatal=False)
    assert len(enforcer.calls) == 2


def test_changed_policy_file_takes_effect(enforcer, policy_file,
                                          monkeypatch):
    monkeypatch.setattr(policy, 'RELOAD_CHECK_SECONDS', 0)
    admin, member = _ctx(['admin']), _ctx(['member'])
    assert enforcer.authorize(admin, ACTION, _target())
    assert not enforcer.authorize(member, ACTION, _target(), fatal=False)
    _write(policy_file, '"%s": "role:member"\n' % ACTION)
    assert enforcer.authorize(member, ACTION, _target())
    assert not enforcer.authorize(admin, ACTION, _target(), fatal=False)
    _write(policy_file, '{}\n')
    assert enforcer.authorize(admin, ACTION, _target())
    assert not enforcer.authorize(member, ACTION, _target(), fatal=False)


def test_edit_is_seen_within_the_reload_interval(enforcer, policy_file,
                                                 monkeypatch):
    member = _ctx(['member'])
    assert not enforcer.authorize(member, ACTION, _target(), fatal=False)
    _write(policy_file, '"%s": "@"\n' % ACTION)
    clock = [policy.time.monotonic() + policy.RELOAD_CHECK_SECONDS + 1]
    monkeypatch.setattr(policy.time, 'monotonic', lambda: clock[0])
    assert enforcer.authorize(member, ACTION, _target())


def test_set_rules_forgets_decisions(enforcer):
    member = _ctx(['member'])
    assert not enforcer.authorize(member, ACTION, _target(), fatal=False)
    oslo = enforcer._get()
    oslo.set_rules({ACTION: _checks.TrueCheck()}, overwrite=False)
    assert enforcer.authorize(member, ACTION, _target())


def test_reset_forgets_decisions(enforcer, policy_file):
    member = _ctx(['member'])
    assert not enforcer.authorize(member, ACTION, _target(), fatal=False)
    _write(policy_file, '"%s": "role:member"\n' % ACTION)
    enforcer.reset()
    assert enforcer.authorize(member, ACTION, _target())


def test_cache_is_bounded(enforcer, monkeypatch):
    monkeypatch.setattr(policy, 'DECISION_CACHE_SIZE', 4)
    enforcer.reset()
    for n in range(20):
        project = 'p%d' % n
        assert enforcer.authorize(_ctx(['member'], project=project), OWNER,
                                  _target(project))
    assert len(enforcer._get().decisions._entries) == 4
    # The most recent decisions are the ones kept.
    del enforcer.calls[:]
    enforcer.authorize(_ctx(['member'], project='p19'), OWNER, _target('p19'))
    assert enforcer.calls == []


def test_unhashable_target_is_checked_every_time(enforcer):
    target = {'project_id': 'p1', 'user_id': 'u1', 'extra': {'a': 1}}
    for _ in range(2):
        assert enforcer.authorize(_ctx(['member']), OWNER, target)
    assert len(enforcer.calls) == 2


class _Flaky(_checks.Check):
    """A registered check whose answer changes from one call to the next."""

    answers = []

    def __call__(self, target, creds, enforcer, current_rule=None):
        return self.answers.pop(0)


def test_rules_with_impure_checks_are_not_cached(enforcer, monkeypatch):
    monkeypatch.setitem(_checks.registered_checks, 'berthflaky', _Flaky)
    monkeypatch.setattr(_Flaky, 'answers', [True, False])
    oslo = enforcer._get()
    oslo.set_rules({ACTION: oslo_policy._parser.parse_rule('berthflaky:x')},
                   overwrite=False)
    assert enforcer.authorize(_ctx(['member']), ACTION, _target())
    assert not enforcer.authorize(_ctx(['member']), ACTION, _target(),
                                  fatal=False)


def test_unregistered_action_still_raises(enforcer):
    with pytest.raises(oslo_policy.PolicyNotRegistered):
        enforcer.authorize(_ctx(['admin']), 'test:unknown', _target())
