# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The ``[oslo_messaging_notifications]`` group, owned by oslo.messaging.

oslo.messaging's own default driver is none: a service would send no
notification at all until an operator configured one. Berth sends its
versioned server notifications by default instead (driver
``messagingv2``, topic ``notifications``), so a telemetry consumer can
subscribe without touching the services (doc/operations.md,
"Notifications"). ``driver = noop`` turns them off; Nova's consumers
listen on ``versioned_notifications``, which ``topics`` can name.
The sample config lists these options through the ``oslo.messaging``
namespace of the config generator, so :func:`list_opts` returns nothing.
"""

from oslo_messaging import opts as messaging_opts

GROUP = 'oslo_messaging_notifications'
DEFAULT_DRIVER = ['messagingv2']
DEFAULT_TOPICS = ['notifications']


def _notification_opts():
    for group, opts in messaging_opts.list_opts():
        if group == GROUP:
            return opts
    return []


def register_opts(conf):
    """Register oslo.messaging's notification options, Berth's defaults."""
    conf.register_opts(_notification_opts(), group=GROUP)
    conf.set_default('driver', DEFAULT_DRIVER, group=GROUP)
    conf.set_default('topics', DEFAULT_TOPICS, group=GROUP)


def list_opts():
    """Listed by the oslo.messaging namespace instead."""
    return []
