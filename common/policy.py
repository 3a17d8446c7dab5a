# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""oslo.policy glue shared by the HTTP APIs.

Each API owns its rule list (for placement, :mod:`services.placement.policies`)
and builds one :class:`Enforcer` from it. Whether the legacy defaults or the
new, scoped defaults apply is oslo.policy's ``[oslo_policy]
enforce_new_defaults``; the policy file overrides either.

Decisions are remembered: a policy check costs oslo.policy a good part of a
millisecond, while an API sees the same few callers do the same few things
over and over. See :class:`_Decisions` for what may be remembered and when
it is forgotten.
"""

import collections
import logging
import threading
import time

from oslo_policy import _checks
from oslo_policy import policy as oslo_policy

LOG = logging.getLogger(__name__)

PolicyNotAuthorized = oslo_policy.PolicyNotAuthorized

# How often, at most, the policy files are checked for changes.
RELOAD_CHECK_SECONDS = 1.0

# How many (action, target, caller) decisions an enforcer remembers.
DECISION_CACHE_SIZE = 4096

# NOTE: exact types, so that True and 1 (equal, and equal hashes) or a str
# subclass with its own comparison never share an entry.
_SCALARS = frozenset((str, int, float, bool, type(None)))

# Checks whose answer depends on nothing but the rules, target and
# credentials. Anything else (http: checks, checks a service registers)
# might answer differently next time, so rules using one are never cached.
_PURE_CHECK_NAMES = ('TrueCheck', 'FalseCheck', 'AndCheck', 'OrCheck',
                     'NotCheck', 'RuleCheck', 'RoleCheck', 'GenericCheck')

_MISSING = object()


# --- seam: the only use of oslo.policy internals ---------------------------

# NOTE: a class a release no longer has is left out (see _check_parts).
_PURE_CHECKS = frozenset(
    cls for cls in (getattr(_checks, name, None)
                    for name in _PURE_CHECK_NAMES) if cls is not None)


def _check_parts(check):
    """(pure, the rule a rule check names, sub-checks) of a parsed check.

    NOTE: seam: oslo.policy keeps its check classes in the private
    ``oslo_policy._checks`` module and offers no way to look inside a
    parsed rule, which the decision cache needs to know a rule is pure.
    It reads the classes named in :data:`_PURE_CHECK_NAMES`,
    ``RuleCheck.match``, ``NotCheck.rule`` and ``AndCheck.rules`` /
    ``OrCheck.rules``; checked against oslo.policy 6.0.1.
    tests/unit/test_library_seams.py fails naming this seam when a release
    changes one of them; until then a class that is gone only makes rules
    using it uncached (not pure), never wrongly cached.
    """
    kind = type(check)
    if kind not in _PURE_CHECKS:
        return False, None, ()
    if kind is getattr(_checks, 'RuleCheck', None):
        return True, check.match, ()
    if kind is getattr(_checks, 'NotCheck', None):
        return True, None, (check.rule,)
    return True, None, tuple(getattr(check, 'rules', ()))


def _frozen(mapping):
    """A hashable, type-exact form of a flat dict, or None.

    None when a key is not a string or a value is not a plain scalar or a
    list or tuple of them: such a target or caller is not cached.
    """
    if not isinstance(mapping, dict):
        return None
    items = []
    for key, value in mapping.items():
        if type(key) is not str:
            return None
        kind = type(value)
        if kind in (list, tuple):
            if any(type(v) not in _SCALARS for v in value):
                return None
            value = tuple((type(v), v) for v in value)
        elif kind not in _SCALARS:
            return None
        items.append((key, kind, value))
    items.sort(key=lambda item: item[0])
    return tuple(items)


def _is_pure(rules, check, seen):
    """True when ``check`` and every rule it refers to are pure checks."""
    pure, rule_name, subs = _check_parts(check)
    if not pure:
        return False
    if rule_name is not None:
        if rule_name in seen:
            return True
        seen.add(rule_name)
        # NOTE: a rule that does not exist is a plain, stable denial.
        target = rules.get(rule_name)
        return target is None or _is_pure(rules, target, seen)
    return all(_is_pure(rules, sub, seen) for sub in subs)


class _Decisions(object):
    """A bounded LRU of policy decisions, forgotten when rules change.

    Only decisions that cannot change while the rules stay the same are
    kept: the action is registered and all of its rule is pure checks, and
    target and credentials are flat dicts of plain values (compared by
    value and exact type, so two callers never share an entry unless every
    credential matches). Every change of the rules (a set_rules, clear,
    register_default, and each look at the policy files) empties the cache;
    a decision worked out while the rules changed is not stored.
    """

    def __init__(self, size):
        self._size = size
        self._lock = threading.Lock()
        self._entries = collections.OrderedDict()
        self._pure = {}
        self.generation = 0

    def invalidate(self):
        """Forget every decision."""
        with self._lock:
            self.generation += 1
            self._entries.clear()
            self._pure = {}

    def get(self, key):
        """The remembered decision for ``key``, or ``_MISSING``."""
        with self._lock:
            value = self._entries.get(key, _MISSING)
            if value is not _MISSING:
                self._entries.move_to_end(key)
            return value

    def put(self, generation, key, value):
        """Remember a decision taken under rules of ``generation``."""
        with self._lock:
            if generation != self.generation:
                return
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def is_pure(self, enforcer, action):
        """True when decisions on ``action`` may be cached."""
        # NOTE: an answer worked out while the rules change lands in the
        # map that invalidate() has just dropped.
        known = self._pure
        pure = known.get(action)
        if pure is None:
            rule = enforcer.rules.get(action)
            pure = (action in enforcer.registered_rules and rule is not None
                    and _is_pure(enforcer.rules, rule, {action}))
            known[action] = pure
        return pure


class _ThrottledEnforcer(oslo_policy.Enforcer):
    """An oslo.policy Enforcer that looks at its files at most once a second.

    NOTE: oslo.policy stats every policy file and directory on every check
    to notice edits; on a busy API that is a measurable share of a request.
    Edits are still picked up, within RELOAD_CHECK_SECONDS.
    """

    _last_load = None

    def __init__(self, *args, **kwargs):
        self.decisions = _Decisions(DECISION_CACHE_SIZE)
        super().__init__(*args, **kwargs)

    def load_rules(self, force_reload=False):
        now = time.monotonic()
        if (not force_reload and self.rules and self._last_load is not None
                and now - self._last_load < RELOAD_CHECK_SECONDS):
            return
        self.decisions.invalidate()
        super().load_rules(force_reload)
        # NOTE: again once the rules are complete: a decision worked out
        # against half-loaded rules must not outlive the load.
        self.decisions.invalidate()
        self._last_load = now

    def set_rules(self, rules, overwrite=True, use_conf=False):
        self.decisions.invalidate()
        super().set_rules(rules, overwrite=overwrite, use_conf=use_conf)

    def clear(self):
        self.decisions.invalidate()
        super().clear()

    def register_default(self, default):
        self.decisions.invalidate()
        super().register_default(default)


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
        # NOTE: notice policy file edits (and forget cached decisions)
        # before looking in the cache.
        enforcer.load_rules()
        decisions = enforcer.decisions
        generation = decisions.generation
        creds = dict(context.to_policy_values().items())
        key = None
        if decisions.is_pure(enforcer, action):
            frozen_target, frozen_creds = _frozen(target), _frozen(creds)
            if frozen_target is not None and frozen_creds is not None:
                key = (action, frozen_target, frozen_creds)
        if key is not None:
            allowed = decisions.get(key)
            if allowed is not _MISSING:
                if not allowed and fatal:
                    raise PolicyNotAuthorized(action, target, creds)
                return allowed
        try:
            allowed = enforcer.authorize(action, target, creds,
                                         do_raise=fatal)
        except PolicyNotAuthorized:
            if key is not None:
                decisions.put(generation, key, False)
            raise
        except oslo_policy.InvalidScope:
            # NOTE: a token of the wrong scope (a system token on a project
            # API) is a plain denial to the caller, not a server error.
            LOG.debug('Policy %s denied: wrong scope %s', action,
                      context.system_scope)
            if key is not None:
                decisions.put(generation, key, False)
            if fatal:
                raise PolicyNotAuthorized(action, target, context.to_dict())
            return False
        if key is not None:
            decisions.put(generation, key, allowed)
        return allowed
