# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Service records and heartbeats: who runs where, and who is up.

Every service joins its group at start (one record per host and binary)
and then reports every ``report_interval`` seconds. A service is up when
its last report is at most ``service_down_time`` old and it is not
``forced_down``; ``disabled`` keeps it out of scheduling but not down.

Where records live is a driver (``[DEFAULT] servicegroup_driver``). This
module holds the interface and the in-memory driver (tests, all-in-one);
the ``db`` driver, on the cell database's ``services`` table (through the
conductor for computes), registers itself with :func:`register_driver`
when that database exists.
"""

import abc
import dataclasses
import datetime
import logging
import threading

from oslo_utils import timeutils

import common.conf
from common import exception

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF

_DRIVERS = {}


@dataclasses.dataclass
class ServiceRecord(object):
    """One service's record: identity, heartbeat and admin flags."""

    host: str
    binary: str
    topic: str = None
    report_count: int = 0
    disabled: bool = False
    disabled_reason: str = None
    forced_down: bool = False
    created_at: datetime.datetime = None
    updated_at: datetime.datetime = None

    def to_primitive(self):
        """JSON primitives (timestamps in ISO 8601) for RPC."""
        data = dataclasses.asdict(self)
        for key in ('created_at', 'updated_at'):
            if data[key] is not None:
                data[key] = data[key].isoformat()
        return data

    @classmethod
    def from_primitive(cls, data):
        """The inverse of :meth:`to_primitive`."""
        data = dict(data)
        for key in ('created_at', 'updated_at'):
            if data.get(key):
                data[key] = timeutils.parse_isotime(data[key]).replace(
                    tzinfo=None)
        return cls(**data)


class ServiceGroupDriver(object, metaclass=abc.ABCMeta):
    """Where service records are kept. Timestamps are naive UTC."""

    @abc.abstractmethod
    def join(self, host, binary, topic):
        """Create the record of (host, binary), or return the existing one.

        :returns: the :class:`ServiceRecord`.
        """

    @abc.abstractmethod
    def report(self, host, binary):
        """Heartbeat: add one to report_count and set updated_at to now.

        :returns: the updated :class:`ServiceRecord`.
        :raises common.exception.ServiceNotFound: for an unknown service.
        """

    @abc.abstractmethod
    def get(self, host, binary):
        """The record of (host, binary), or None."""

    @abc.abstractmethod
    def get_all(self, binary=None):
        """Every record, or those of one binary, ordered by host."""

    @abc.abstractmethod
    def update(self, host, binary, **values):
        """Set admin fields (disabled, disabled_reason, forced_down).

        :returns: the updated :class:`ServiceRecord`.
        :raises common.exception.ServiceNotFound: for an unknown service.
        """


class MemoryDriver(ServiceGroupDriver):
    """Records in a dict of this process: for tests and all-in-one only.

    NOTE: each worker process has its own dict, so with several processes
    the records are per process; production uses the ``db`` driver.
    """

    _UPDATABLE = ('disabled', 'disabled_reason', 'forced_down')

    def __init__(self):
        self._lock = threading.Lock()
        self._records = {}

    def _copy(self, record):
        # NOTE: callers get copies, so nobody edits a record behind the
        # lock (the database driver behaves the same way).
        return dataclasses.replace(record)

    def _get_or_raise(self, host, binary):
        try:
            return self._records[(host, binary)]
        except KeyError:
            raise exception.ServiceNotFound(host=host, binary=binary)

    def join(self, host, binary, topic):
        """See :meth:`ServiceGroupDriver.join`."""
        with self._lock:
            record = self._records.get((host, binary))
            if record is None:
                record = ServiceRecord(host=host, binary=binary, topic=topic,
                                       created_at=timeutils.utcnow())
                self._records[(host, binary)] = record
            return self._copy(record)

    def report(self, host, binary):
        """See :meth:`ServiceGroupDriver.report`."""
        with self._lock:
            record = self._get_or_raise(host, binary)
            record.report_count += 1
            record.updated_at = timeutils.utcnow()
            return self._copy(record)

    def get(self, host, binary):
        """See :meth:`ServiceGroupDriver.get`."""
        with self._lock:
            record = self._records.get((host, binary))
            return None if record is None else self._copy(record)

    def get_all(self, binary=None):
        """See :meth:`ServiceGroupDriver.get_all`."""
        with self._lock:
            return [self._copy(r) for key, r in sorted(self._records.items())
                    if binary is None or r.binary == binary]

    def update(self, host, binary, **values):
        """See :meth:`ServiceGroupDriver.update`."""
        unknown = set(values) - set(self._UPDATABLE)
        if unknown:
            raise ValueError('not updatable: %s' % ', '.join(sorted(unknown)))
        with self._lock:
            record = self._get_or_raise(host, binary)
            for key, value in values.items():
                setattr(record, key, value)
            record.updated_at = record.updated_at or timeutils.utcnow()
            return self._copy(record)


def register_driver(name, factory):
    """Make ``factory()`` the driver named ``name`` in servicegroup_driver."""
    _DRIVERS[name] = factory


register_driver('memory', MemoryDriver)


def service_down_time():
    """``service_down_time``, raised above ``report_interval`` if needed.

    NOTE: a down time not longer than the heartbeat interval would show
    every service down between two heartbeats.
    """
    down_time = CONF.service_down_time
    if down_time <= CONF.report_interval:
        new = int(2.5 * CONF.report_interval)
        LOG.warning('service_down_time (%(down)d) must be larger than '
                    'report_interval (%(report)d); using %(new)d',
                    {'down': down_time, 'report': CONF.report_interval,
                     'new': new})
        down_time = new
    return down_time


class API(object):
    """The service group as services and the API see it.

    :param driver: a :class:`ServiceGroupDriver`; default: a new instance
        of the driver ``[DEFAULT] servicegroup_driver`` names.
    :raises common.exception.ConfigurationError: for a driver that is not
        available in this process.
    """

    def __init__(self, driver=None):
        if driver is None:
            name = CONF.servicegroup_driver
            if name == 'db' and name not in _DRIVERS:
                # NOTE: imported here: it needs the cell database modules,
                # which the in-memory driver's users never load.
                from common import servicegroup_db  # noqa: F401
            if name not in _DRIVERS:
                raise exception.ConfigurationError(
                    reason='servicegroup_driver %r is not available here '
                           '(known: %s)' % (name, ', '.join(sorted(_DRIVERS))))
            driver = _DRIVERS[name]()
        self.driver = driver

    def join(self, host, binary, topic):
        """Create or fetch the record of (host, binary)."""
        return self.driver.join(host, binary, topic)

    def report(self, host, binary):
        """Record one heartbeat of (host, binary)."""
        return self.driver.report(host, binary)

    def get(self, host, binary):
        """The record of (host, binary), or None."""
        return self.driver.get(host, binary)

    def get_all(self, binary=None):
        """All records, or those of one binary."""
        return self.driver.get_all(binary)

    def update(self, host, binary, **values):
        """Set disabled / disabled_reason / forced_down."""
        return self.driver.update(host, binary, **values)

    def service_is_up(self, record):
        """True when ``record`` heartbeated recently and is not forced down.

        :param record: a :class:`ServiceRecord`.
        """
        if record.forced_down:
            return False
        last = record.updated_at or record.created_at
        if last is None:
            return False
        # NOTE: abs() so that a clock a little ahead on the reporting host
        # does not make its service look down.
        elapsed = abs((timeutils.utcnow() - last).total_seconds())
        return elapsed <= service_down_time()
