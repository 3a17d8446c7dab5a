# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Load the configured filters and weighers from their entry points."""

import stevedore

from common import exception

FILTER_NAMESPACE = 'berth.scheduler.filters'
WEIGHER_NAMESPACE = 'berth.scheduler.weighers'


class SchedulerHostFilterNotFound(exception.ConfigurationError):
    msg_fmt = ('Scheduler host filter %(name)s is not installed (entry '
               'point namespace %(namespace)s).')


def _load(namespace, names):
    manager = stevedore.NamedExtensionManager(
        namespace, names=names, name_order=True, invoke_on_load=True,
        on_missing_entrypoints_callback=lambda missing: None)
    found = {ext.name for ext in manager.extensions}
    for name in names:
        if name not in found:
            raise SchedulerHostFilterNotFound(name=name, namespace=namespace)
    return [ext.obj for ext in manager.extensions]


def load_filters(names):
    """Filter objects for ``names``, in that order.

    :raises SchedulerHostFilterNotFound: a name is not installed; the
        scheduler refuses to start rather than silently skip a filter.
    """
    return _load(FILTER_NAMESPACE, list(names))


def load_weighers(names):
    """Weigher objects for ``names``; ['all'] means every installed one."""
    if list(names) == ['all']:
        manager = stevedore.ExtensionManager(WEIGHER_NAMESPACE,
                                             invoke_on_load=True)
        return [ext.obj for ext in sorted(manager.extensions,
                                          key=lambda e: e.name)]
    return _load(WEIGHER_NAMESPACE, list(names))
