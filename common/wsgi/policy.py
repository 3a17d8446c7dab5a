# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The glue between an API's policy rules and its handlers.

Each API's ``policies.py`` owns its rules: the names, the defaults, the
deprecations, and the message of a denial. The rest is the same for both
and lives here: turning an operations table into documented rules, one
process-wide enforcer built on first use, and the check a handler makes
for its caller.
"""

from oslo_policy import policy

from common import policy as common_policy


def documented_rule(name, check_str, description, operations,
                    deprecated_rule=None):
    """A project-scoped DocumentedRuleDefault.

    :param name: the rule name (``placement:traits:list``).
    :param check_str: the default check.
    :param description: what the rule guards, for the sample policy file.
    :param operations: [(method, path)] of the API calls it guards.
    :param deprecated_rule: the oslo.policy DeprecatedRule it replaces.
    """
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'method': m, 'path': p} for m, p in operations],
        scope_types=['project'], deprecated_rule=deprecated_rule)


class EnforcerHolder(object):
    """One API's process-wide enforcer, built from the first config seen."""

    def __init__(self, rules_fn):
        """
        :param rules_fn: callable returning the API's rule list.
        """
        self._rules_fn = rules_fn
        self._enforcer = None

    def get(self, conf):
        """The :class:`common.policy.Enforcer` for ``conf``."""
        if self._enforcer is None:
            self._enforcer = common_policy.Enforcer(conf, self._rules_fn)
        return self._enforcer

    def reset(self):
        """Drop the enforcer (tests and SIGHUP)."""
        if self._enforcer is not None:
            self._enforcer.reset()
        self._enforcer = None


def authorize(ctx, enforcer, action, target, denied, message, fatal=True):
    """Check ``action`` for the caller ``ctx``.

    :param enforcer: the API's :class:`common.policy.Enforcer`.
    :param target: the policy target; None means the caller's project and
        user.
    :param denied: the API's 403 exception class.
    :param message: its message, with ``%s`` for the action.
    :param fatal: raise on denial; otherwise return False.
    :raises: ``denied``, when denied and ``fatal``.
    """
    try:
        return ctx.can(enforcer, action, target, fatal=fatal)
    except common_policy.PolicyNotAuthorized:
        raise denied(message % action)
