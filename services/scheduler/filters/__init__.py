# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Host filters: the base class and the per-request records they write.

A filter decides, host by host, whether a host can take the request::

    class ExampleFilter(filters.BaseHostFilter):
        run_filter_once_per_request = True

        def host_passes(self, host_state, spec_obj):
            if host_state.free_ram_mb < spec_obj.memory_mb:
                return self.reject(host_state, 'has %d MB free, %d needed',
                                   host_state.free_ram_mb, spec_obj.memory_mb)
            return True

Filters are registered as entry points in ``berth.scheduler.filters`` (one
module per filter) and enabled by name in ``[filter_scheduler]
enabled_filters``. One filter object serves every request and thread, so
filters keep no per-request state on ``self``; a rejection reason goes
through :meth:`BaseHostFilter.reject` into the thread's current
:class:`Rejections` record, which becomes the scheduler's explanation.

Filters only read host states. The one thing some of them produce for a
host, the limits the compute claim checks (``memory_mb``, ``vcpu``,
``disk_gb``, ``numa_topology``), goes through
:meth:`BaseHostFilter.set_limit` into the request's :class:`Limits`: the
host-state copies a request filters may be shared with the other requests
on the same placement answer (see answer_snapshot), and one request's
limits must not reach another's selections.
"""

import logging
import threading

LOG = logging.getLogger(__name__)

_CURRENT = threading.local()


class Rejections(object):
    """Reasons recorded by filters during one filtering pass.

    :ivar by_host: (host, node) -> (filter name, reason) of the first
        filter that rejected the host.
    """

    def __init__(self):
        self.by_host = {}

    def add(self, host_state, filter_name, reason):
        """Record why ``filter_name`` rejected ``host_state``."""
        key = (host_state.host, host_state.nodename)
        self.by_host.setdefault(key, (filter_name, reason))

    def __enter__(self):
        _CURRENT.rejections = self
        return self

    def __exit__(self, *exc):
        _CURRENT.rejections = None
        return False


def current_rejections():
    """The Rejections record of this thread's filtering pass, or None."""
    return getattr(_CURRENT, 'rejections', None)


class Limits(object):
    """The limits filters set for the hosts of one request.

    One request's record, written by the thread running it; entered
    around each of its filtering passes, so that
    :meth:`BaseHostFilter.set_limit` finds it.
    """

    def __init__(self):
        # (host, node) -> {limit name: value}
        self._by_host = {}

    def set(self, host_state, name, value):
        """Record limit ``name`` of ``host_state``."""
        key = (host_state.host, host_state.nodename)
        self._by_host.setdefault(key, {})[name] = value

    def of(self, host_state):
        """The limits recorded for ``host_state`` (a new dict)."""
        return dict(self._by_host.get(
            (host_state.host, host_state.nodename), ()))

    def __enter__(self):
        _CURRENT.limits = self
        return self

    def __exit__(self, *exc):
        _CURRENT.limits = None
        return False


def current_limits():
    """The Limits record of this thread's request, or None."""
    return getattr(_CURRENT, 'limits', None)


class BaseHostFilter(object):
    """Base of every host filter.

    :cvar run_filter_once_per_request: True when the answer for a host
        cannot change between the instances of one multi-create request
        (zone, aggregates, image), so later instances reuse it.
    :cvar RUN_ON_REBUILD: whether the filter applies when rebuilding an
        instance in place (the host is then fixed).
    """

    run_filter_once_per_request = False
    RUN_ON_REBUILD = False

    @property
    def name(self):
        """The filter's class name, as configured and logged."""
        return type(self).__name__

    def run_filter_for_request(self, spec_obj):
        """False when this filter passes every host for ``spec_obj``.

        The pipeline then skips the host-by-host pass (and records that
        every host passed). A filter overrides this when it can tell from
        the request alone, e.g. an affinity filter for a request without
        a server group; the default runs the filter.
        """
        return True

    def host_passes(self, host_state, spec_obj):
        """True when ``host_state`` can take one instance of ``spec_obj``."""
        raise NotImplementedError()

    def reject(self, host_state, reason, *args):
        """Record why ``host_state`` fails this filter; returns False.

        :param reason: a %-format string saying what the host lacks.
        """
        text = reason % args if args else reason
        LOG.debug('%s fails %s: %s', host_state, self.name, text)
        rejections = current_rejections()
        if rejections is not None:
            rejections.add(host_state, self.name, text)
        return False

    def set_limit(self, host_state, name, value):
        """Hand the compute claim limit ``name`` for ``host_state``.

        NOTE: the limit goes into the current request's :class:`Limits`,
        never into a host state the request may share. With no request
        record (a filter run on its own, on a state its caller owns),
        the state's own ``limits`` take it.
        """
        limits = current_limits()
        if limits is not None:
            limits.set(host_state, name, value)
        else:
            host_state.limits[name] = value

    def filter_all(self, host_states, spec_obj):
        """Yield the hosts that pass."""
        for host_state in host_states:
            if self.host_passes(host_state, spec_obj):
                yield host_state
