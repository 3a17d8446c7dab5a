# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server side of the scheduler RPC API: thin, the work is in scheduling.py.

The manager wires the pipeline together at start-up (host-state source,
placement client, filters and weighers by name) and turns RPC payloads into
objects and back.
"""

import logging

import oslo_messaging as messaging

from common.conf import CONF
from common import manager
from common.objects import request_spec as spec_obj
from common.placement import client as placement_client
from common import rpc
from services.scheduler.capacity import headroom as headroom_mod
from services.scheduler.client import placement as placement_mod
from services.scheduler import decision_record
from services.scheduler import host_manager as host_manager_mod
from services.scheduler import host_state
from services.scheduler import loading
from services.scheduler import offline
from services.scheduler import scheduling

LOG = logging.getLogger(__name__)


class SchedulerManager(manager.Manager):
    """Answers select_destinations, explain, headroom and cache updates."""

    target = messaging.Target(version='1.0')

    def __init__(self, host=None, source=None, placement=None):
        """
        :param source: a HostSource; defaults to the databases.
        :param placement: a SchedulerPlacementClient; defaults to one
            built from [placement].
        :raises loading.SchedulerHostFilterNotFound: unknown filter name.
        """
        super().__init__(host=host, service_name='scheduler')
        if source is None:
            from services.scheduler.sources import database
            source = database.DatabaseHostSource()
        if placement is None:
            placement = placement_mod.SchedulerPlacementClient(
                placement_client.PlacementClient(CONF))
        self.host_manager = host_manager_mod.HostManager(source)
        notifier = None
        # NOTE: with no notification driver the scheduler sends nothing,
        # and so serializes no request spec for it.
        if rpc.notifications_enabled():
            notifier = rpc.get_notifier('scheduler.%s' % self.host)
        self.scheduler = scheduling.Scheduler(
            self.host_manager, placement,
            loading.load_filters(CONF.filter_scheduler.enabled_filters),
            loading.load_weighers(CONF.filter_scheduler.weight_classes),
            notifier=notifier)

    @messaging.expected_exceptions(scheduling.NoValidHost)
    def select_destinations(self, ctxt, request_spec, instance_uuids,
                            return_alternates=True, hand_over=None):
        """Choose and claim hosts; see SchedulerAPI.select_destinations.

        :returns: per instance, a list of Selection primitives.
        :raises scheduling.NoValidHost: with the explanation.
        """
        spec = spec_obj.RequestSpec.from_primitive(request_spec)
        selections, explanation = self.scheduler.select_destinations(
            ctxt, spec, instance_uuids, return_alternates=return_alternates,
            hand_over=hand_over)
        LOG.info('Scheduled %s: %s', instance_uuids,
                 [[s.service_host, s.nodename] for s, *_a in selections])
        decision_record.attach(selections, explanation)
        return [[s.to_primitive() for s in per] for per in selections]

    def explain(self, ctxt, request_spec):
        """Dry run: where would this request go, and why.

        :returns: the explanation dict; ``selected`` is empty and
            ``summary`` says why when nothing fits.
        """
        spec = spec_obj.RequestSpec.from_primitive(request_spec)
        return offline.explain(self.scheduler, ctxt, spec)

    def headroom(self, ctxt, request_spec, aggregate=None):
        """How many more servers of this request fit (nothing claimed).

        :returns: the :class:`~services.scheduler.capacity.headroom.
            Headroom` as a dict.
        """
        spec = spec_obj.RequestSpec.from_primitive(request_spec)
        return headroom_mod.headroom(self.scheduler, ctxt, spec,
                                     aggregate=aggregate).to_dict()

    def update_aggregates(self, ctxt):
        """An aggregate changed somewhere: reload them on next use."""
        self.host_manager.invalidate_aggregates()

    def update_instance_info(self, ctxt, compute_uuid, instances):
        """A compute node reported the instances it runs."""
        self.host_manager.update_instance_info(
            compute_uuid, {i['uuid']: host_state.InstanceInfo(**i)
                           for i in instances})

    def delete_instance_info(self, ctxt, compute_uuid):
        """A compute node is gone."""
        self.host_manager.forget(compute_uuid)
