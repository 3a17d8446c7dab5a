# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""oslo.policy glue shared by the HTTP APIs.

Each API owns its rule list (for placement, :mod:`services.placement.policies`)
and builds one :class:`Enforcer` from it. Whether the legacy defaults or the
new, scoped defaults apply is oslo.policy's ``[oslo_policy]
enforce_new_defaults``; the policy file overrides either.
"""

import logging
import threading
import time

from oslo_policy import policy as oslo_policy

LOG = logging.getLogger(__name__)

PolicyNotAuthorized = oslo_policy.PolicyNotAuthorized

# How often, at most, the policy files are checked for changes.
RELOAD_CHECK_SECONDS = 1.0


class _ThrottledEnforcer(oslo_policy.Enforcer):
    """An oslo.policy Enforcer that looks at its files at most once a second.

    NOTE: oslo.policy stats every policy file and directory on every check
    to notice edits; on a busy API that is a measurable share of a request.
    Edits are still picked up, within RELOAD_CHECK_SECONDS.
    """

    _last_load = None

    def load_rules(self, force_reload=False):
        now = time.monotonic()
        if (not force_reload and self.rules and self._last_load is not None
                and now - self._last_load < RELOAD_CHECK_SECONDS):
            return
        super().load_rules(force_reload)
        self._last_load = now


class Enforcer(object):
    """A lazily-built, thread-safe oslo.policy enforcer over one rule list."""

    def __init__(self, conf, rules_fn):
        """
        :param conf: the oslo.config ConfigOpts holding [oslo_policy].
        :param rules_fn: callable returning the list of DocumentedRuleDefault.
        """
        self._conf = conf
        self._rules_fn = rules_fn
        self._enforcer = None
        self._lock = threading.Lock()

    def _get(self):
        if self._enforcer is None:
            with self._lock:
                if self._enforcer is None:
                    enforcer = _ThrottledEnforcer(self._conf)
                    enforcer.register_defaults(self._rules_fn())
                    enforcer.load_rules()
                    self._enforcer = enforcer
        return self._enforcer

    def reset(self):
        """Forget the loaded rules; the next check reloads them."""
        with self._lock:
            if self._enforcer is not None:
                self._enforcer.clear()
            self._enforcer = None

    def authorize(self, context, action, target, fatal=True):
        """Return True when ``context`` may do ``action`` on ``target``.

        :raises PolicyNotAuthorized: when denied and ``fatal``.
        """
        enforcer = self._get()
        try:
            return enforcer.authorize(action, target, context,
                                      do_raise=fatal)
        except oslo_policy.InvalidScope:
            # NOTE: a token of the wrong scope (a system token on a project
            # API) is a plain denial to the caller, not a server error.
            LOG.debug('Policy %s denied: wrong scope %s', action,
                      context.system_scope)
            if fatal:
                raise PolicyNotAuthorized(action, target, context.to_dict())
            return False
