# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Notifications are off until a driver is set, as in Nova
(doc/operations.md, "Notifications"), and go to ``notifications``.
"""

from oslo_config import cfg
import oslo_messaging as messaging

from common.conf import opts


def test_off_by_default_on_the_notifications_topic():
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    conf([])
    group = conf.oslo_messaging_notifications
    # NOTE: no driver, so the notifier loads none and sends nothing.
    assert (group.driver, group.topics) == ([], ['notifications'])


def test_an_operator_turns_them_on():
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    conf([])
    conf.set_override('driver', ['messagingv2'],
                      group='oslo_messaging_notifications')
    transport = messaging.get_notification_transport(conf, url='fake://')
    try:
        assert messaging.Notifier(transport).is_enabled()
    finally:
        transport.cleanup()
