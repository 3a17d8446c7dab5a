# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The base class of every service's RPC manager (the server side).

A manager's public methods are its RPC methods; its ``target`` says which
version it speaks. Periodic tasks are methods decorated with
:func:`periodic_task`; the service runner calls :meth:`periodic_tasks`
between them. ``init_host`` / ``cleanup_host`` bracket the RPC server.
"""

import logging

import oslo_messaging as messaging
from oslo_service import periodic_task as _periodic_task

import common.conf

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF

#: Decorator for a periodic task: ``@periodic_task(spacing=60)``; see
#: ``oslo_service.periodic_task.periodic_task`` for its options
#: (``run_immediately``, ``external_process_ok``...).
periodic_task = _periodic_task.periodic_task


class Manager(_periodic_task.PeriodicTasks):
    """Base of the RPC managers.

    Subclasses set ``target = messaging.Target(version='X.Y')`` and keep
    their RPC API's client (``rpcapi.py``) in step with it.

    :param host: the host this manager serves; default ``[DEFAULT] host``.
    :param service_name: the binary's short name (``scheduler``...), used
        in logs and by ``ping``.
    """

    target = messaging.Target(version='1.0')

    def __init__(self, host=None, service_name='undefined'):
        self.host = host or CONF.host
        self.service_name = service_name
        # NOTE: this registers oslo.service's run_external_periodic_tasks
        # option on CONF, which the periodic task machinery reads.
        super().__init__(CONF)

    @property
    def additional_endpoints(self):
        """More RPC endpoints (other namespaces) the service should serve.

        NOTE: a property, not a class attribute, so that a subclass builds
        its endpoints (which may need ``self``) when the service starts.
        """
        return []

    def periodic_tasks(self, context, raise_on_error=False):
        """Run the periodic tasks that are due.

        :returns: seconds until the next one is due (the runner sleeps
            that long, capped by its own maximum).
        """
        return self.run_periodic_tasks(context,
                                       raise_on_error=raise_on_error)

    def init_host(self):
        """Hook run before the RPC server starts: check and prepare.

        An exception here stops the service from starting.
        """

    def post_start_hook(self):
        """Hook run once the RPC server consumes messages."""

    def cleanup_host(self):
        """Hook run after the RPC server has stopped and drained."""

    def reset(self):
        """Hook run on SIGHUP after mutable options were reloaded.

        Drop caches that depend on configuration here.
        """
