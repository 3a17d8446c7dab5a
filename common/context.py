# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The request context every Berth service passes around.

It carries who is asking (user, project, roles, scope), the request id, and
an oslo.db transaction slot so that database functions decorated with a
reader or writer of :mod:`common.db.api` find their session on it.
"""

from oslo_context import context
from oslo_db.sqlalchemy import enginefacade

from common import policy


@enginefacade.transaction_context_provider
class RequestContext(context.RequestContext):
    """Security and request context, plus a slot for DB transactions."""

    def can(self, enforcer, action, target=None, fatal=True):
        """Check ``action`` against ``enforcer``'s policy for this caller.

        :param enforcer: a :class:`common.policy.Enforcer`.
        :param action: the policy rule name, e.g. ``placement:traits:list``.
        :param target: the target dict; defaults to this context's project
            and user.
        :param fatal: raise on denial instead of returning False.
        :raises common.policy.PolicyNotAuthorized: when denied and fatal.
        """
        if target is None:
            target = {'project_id': self.project_id,
                      'user_id': self.user_id}
        return enforcer.authorize(self, action, target, fatal=fatal)


def get_admin_context():
    """A context with the admin role, for internal and command-line work."""
    return RequestContext(user_id=None, project_id=None, roles=['admin'],
                          is_admin=True, overwrite=False)


__all__ = ['RequestContext', 'get_admin_context', 'policy']
