# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The versioned-notification sender of each compute host.

Nova publishes a compute's instance notifications as ``compute.<host>``;
one :class:`common.notifications.InstanceNotifier` per host, made on
first use and kept (each holds an oslo.messaging Notifier).
"""

import threading

from common import notifications

_NOTIFIERS = {}
_LOCK = threading.Lock()


def for_host(host):
    """The InstanceNotifier publishing as ``compute.<host>``."""
    with _LOCK:
        found = _NOTIFIERS.get(host)
        if found is None:
            found = _NOTIFIERS[host] = notifications.InstanceNotifier(
                'compute.%s' % host)
        return found
