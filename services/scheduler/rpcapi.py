# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Client side of the scheduler RPC API (version history: SchedulerAPI).
"""

import oslo_messaging as messaging

from common.objects import selection as selection_obj
from common import rpc

RPC_TOPIC = 'scheduler'
#: Seconds a headroom call may take (it reads every candidate).
HEADROOM_TIMEOUT = 60
# Release name -> the newest version that release's schedulers understand.
VERSION_ALIASES = {}


class SchedulerAPI(object):
    """What other services call on the schedulers.

    NOTE: Berth has not been released yet. Until its first release every
    RPC API stays at 1.0 and changes in place: client and server are
    changed together, no method downgrades for an older peer, and
    ``[upgrade_levels] scheduler`` has nothing to cap. From the first
    release on, changes are additive minor bumps that older schedulers are
    capped below (doc/architecture.md, "RPC versions").

    API version history:

    * 1.0 - Initial version: select_destinations (each Selection with its
      host's cell_uuid and availability_zone; a moving instance's
      ``hand_over``, sent only when given), explain,
      update_aggregates, update_instance_info, delete_instance_info,
      headroom.
    """

    def __init__(self, select_timeout=None):
        """
        :param select_timeout: seconds to wait for select_destinations;
            default ``[DEFAULT] long_rpc_timeout``.
        """
        self.select_timeout = select_timeout
        target = messaging.Target(topic=RPC_TOPIC, version='1.0')
        cap = rpc.version_cap('scheduler', VERSION_ALIASES)
        self.client = rpc.get_client(target, version_cap=cap)

    def select_destinations(self, ctxt, spec, instance_uuids,
                            return_alternates=True, hand_over=None):
        """Choose and claim a host per instance (a call to one scheduler).

        :param spec: a RequestSpec.
        :param instance_uuids: one uuid per instance; each is the placement
            consumer of its claim.
        :param hand_over: for one moving instance, the source allocation
            its claim gives to the migration in the same write
            (:func:`common.placement.move_allocations.read_hand_over`);
            None: the claim is the instance's alone.
        :returns: per instance, a list of Selection (chosen first, then the
            alternates), each naming its host's cell and zone.
        :raises common.exception.NoValidHost: with the
            scheduler's explanation in ``explanation``.
        """
        # NOTE: a large multi-create may take long; the call monitor still
        # notices a dead scheduler within rpc_response_timeout.
        options = rpc.long_call_options()
        if self.select_timeout:
            options['timeout'] = self.select_timeout
        cctxt = self.client.prepare(version='1.0', **options)
        extra = {} if hand_over is None else {'hand_over': hand_over}
        result = cctxt.call(ctxt, 'select_destinations',
                            request_spec=spec.to_primitive(),
                            instance_uuids=list(instance_uuids),
                            return_alternates=return_alternates, **extra)
        return [[selection_obj.Selection.from_primitive(s) for s in per]
                for per in result]

    def explain(self, ctxt, spec, timeout=None):
        """A dry run: the explanation of where ``spec`` would go.

        :param timeout: seconds to wait; default ``rpc_response_timeout``.
        :returns: the explanation dict (nothing is claimed).
        """
        options = {'timeout': timeout} if timeout else {}
        cctxt = self.client.prepare(version='1.0', **options)
        return cctxt.call(ctxt, 'explain', request_spec=spec.to_primitive())

    def headroom(self, ctxt, spec, aggregate=None, timeout=None):
        """How many more servers of ``spec`` fit (a call, nothing
        claimed).

        :param aggregate: count only hosts in this aggregate.
        :param timeout: seconds; default :data:`HEADROOM_TIMEOUT`.
        :returns: the Headroom dict (see services.scheduler.capacity).
        :raises oslo_messaging.MessagingTimeout: no scheduler answered.
        """
        cctxt = self.client.prepare(version='1.0',
                                    timeout=timeout or HEADROOM_TIMEOUT)
        return cctxt.call(ctxt, 'headroom', request_spec=spec.to_primitive(),
                          aggregate=aggregate)

    def update_aggregates(self, ctxt):
        """Tell every scheduler that aggregates changed (fanout)."""
        cctxt = self.client.prepare(fanout=True, version='1.0')
        cctxt.cast(ctxt, 'update_aggregates')

    def update_instance_info(self, ctxt, compute_uuid, instances):
        """Tell every scheduler which instances a node runs (fanout).

        :param instances: list of InstanceInfo-like dicts.
        """
        cctxt = self.client.prepare(fanout=True, version='1.0')
        cctxt.cast(ctxt, 'update_instance_info', compute_uuid=compute_uuid,
                   instances=instances)

    def delete_instance_info(self, ctxt, compute_uuid):
        """Tell every scheduler a node is gone (fanout)."""
        cctxt = self.client.prepare(fanout=True, version='1.0')
        cctxt.cast(ctxt, 'delete_instance_info', compute_uuid=compute_uuid)
