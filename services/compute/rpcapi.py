# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Client side of the compute RPC API (topic ``compute``, server=host)."""

import oslo_messaging as messaging

from common import rpc

RPC_TOPIC = 'compute'
# Seconds the API waits for a compute agent's diagnostics.
DIAGNOSTICS_TIMEOUT = 30
# Release name -> the newest version that release's computes understand.
VERSION_ALIASES = {}


def _primitive(value):
    return value.to_primitive() if hasattr(value, 'to_primitive') else value


class ComputeAPI(object):
    """What the conductor and the API call on compute agents.

    Every method is a cast to one host: ``server=host``, so only the agent
    serving that host (a simulated one included) receives it. Each also
    carries ``host``: one agent serves many hosts on one listener, and
    the message says which one it is for.

    NOTE: Berth has not been released yet. Until its first release every
    RPC API stays at 1.0 and changes in place: client and server are
    changed together, no method downgrades for an older peer, and
    ``[upgrade_levels] compute`` has nothing to cap. From the first
    release on, changes are additive minor bumps that older computes are
    capped below (doc/architecture.md, "RPC versions").

    API version history:

    * 1.0 - Initial version: build_and_run_instance, terminate_instance,
      get_diagnostics.
    """

    def __init__(self):
        target = messaging.Target(topic=RPC_TOPIC, version='1.0')
        cap = rpc.version_cap('compute', VERSION_ALIASES)
        self.client = rpc.get_client(target, version_cap=cap)

    def _prepare(self, host):
        """The call context for ``host``."""
        return self.client.prepare(server=host, version='1.0')

    def build_and_run_instance(self, ctxt, host, instance, request_spec,
                               selection, alternates, node=None):
        """Build an instance on ``host`` (cast).

        :param instance: an Instance (or its primitive) whose row is in
            the cell with host and node set, building / scheduling.
        :param request_spec: the RequestSpec (or primitive).
        :param selection: the claimed Selection (or primitive); its
            allocation is already in placement.
        :param alternates: Selections (or primitives) to reschedule to.
        :param node: the node; default the selection's.
        """
        self._prepare(host).cast(
            ctxt, 'build_and_run_instance', instance=_primitive(instance),
            request_spec=_primitive(request_spec),
            selection=_primitive(selection),
            alternates=[_primitive(a) for a in alternates or []],
            host=host, node=node)

    def terminate_instance(self, ctxt, host, instance_uuid):
        """Delete an instance running on ``host`` (cast).

        The agent destroys the guest, releases its claim, deletes its
        placement allocation and has the conductor soft-delete the row.
        """
        self._prepare(host).cast(ctxt, 'terminate_instance',
                                 instance_uuid=instance_uuid, host=host)

    def get_diagnostics(self, ctxt, host, instance_uuid):
        """The diagnostics of a guest on ``host`` (a call, at most
        DIAGNOSTICS_TIMEOUT seconds).

        :returns: ``{'diagnostics': dict}`` (Nova's 2.48 shape), or
            ``{'error': 'not-found' | 'not-implemented'}``.
        :raises oslo_messaging.MessagingTimeout: the agent did not answer.
        """
        cctxt = self.client.prepare(server=host, version='1.0',
                                    timeout=DIAGNOSTICS_TIMEOUT)
        return cctxt.call(ctxt, 'get_diagnostics',
                          instance_uuid=instance_uuid, host=host)
