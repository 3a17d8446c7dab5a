# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Berth sends notifications by default (doc/operations.md,
"Notifications"), where oslo.messaging alone would send none.
"""

from oslo_config import cfg
import oslo_messaging as messaging

from common.conf import opts


def test_the_default_driver_and_topic():
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    conf([])
    group = conf.oslo_messaging_notifications
    assert (group.driver, group.topics) == (['messagingv2'],
                                            ['notifications'])
    transport = messaging.get_notification_transport(conf, url='fake://')
    try:
        notifier = messaging.Notifier(transport)
        assert notifier.is_enabled()
    finally:
        transport.cleanup()


def test_an_operator_can_turn_them_off():
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    conf([])
    conf.set_override('driver', ['noop'],
                      group='oslo_messaging_notifications')
    transport = messaging.get_notification_transport(conf, url='fake://')
    try:
        assert not messaging.Notifier(transport).is_enabled()
    finally:
        transport.cleanup()
