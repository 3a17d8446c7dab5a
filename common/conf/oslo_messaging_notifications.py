# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The ``[oslo_messaging_notifications]`` group, owned by oslo.messaging.

Berth keeps oslo.messaging's defaults: no driver, so no notification is
sent until an operator sets ``driver = messagingv2`` (as Nova), and the
topic ``notifications``. doc/operations.md, "Notifications", says why
they are off by default (queues nobody consumes grow; they cost CPU) and
what a consumer binds to. The sample config lists these options through
the ``oslo.messaging`` namespace of the config generator, so
:func:`list_opts` returns nothing.
"""

from oslo_messaging import opts as messaging_opts

GROUP = 'oslo_messaging_notifications'


def _notification_opts():
    for group, opts in messaging_opts.list_opts():
        if group == GROUP:
            return opts
    return []


def register_opts(conf):
    """Register oslo.messaging's notification options."""
    conf.register_opts(_notification_opts(), group=GROUP)


def list_opts():
    """Listed by the oslo.messaging namespace instead."""
    return []
