# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The ``baseapi`` RPC interface every Berth service answers: ``ping``."""

import logging

import oslo_messaging as messaging

import common.conf
from common import rpc

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF

# NOTE: a namespace of its own, so that its versions move independently of
# each service's main interface (which has no namespace).
NAMESPACE = 'baseapi'
BASE_RPC_API_VERSION = '1.0'


class BaseAPI(object):
    """Client side of the base RPC API.

    API version history:

    * 1.0 - Initial version: ``ping``.
    """

    VERSION_ALIASES = {}

    def __init__(self, topic):
        target = messaging.Target(topic=topic, namespace=NAMESPACE,
                                  version=BASE_RPC_API_VERSION)
        self.client = rpc.get_client(target)

    def ping(self, context, arg, timeout=None, server=None):
        """Ask one server of the topic (or ``server``) to echo ``arg``.

        :param context: the RequestContext of the caller.
        :param arg: any JSON primitive.
        :param timeout: seconds to wait; default ``rpc_response_timeout``.
        :param server: the host of one particular server.
        :returns: ``{'service': <service name>, 'arg': arg}``.
        :raises oslo_messaging.MessagingTimeout: when nobody answers.
        """
        kwargs = {}
        if server is not None:
            kwargs['server'] = server
        cctxt = self.client.prepare(timeout=timeout, **kwargs)
        return cctxt.call(context, 'ping', arg=arg)


class BaseRPCAPI(object):
    """Server side of the base RPC API, added to every service's endpoints.

    :param service_name: the name reported back by ``ping`` (the binary).
    """

    target = messaging.Target(namespace=NAMESPACE,
                              version=BASE_RPC_API_VERSION)

    def __init__(self, service_name):
        self.service_name = service_name

    def ping(self, context, arg):
        """Echo ``arg`` with this service's name.

        :param context: the caller's RequestContext.
        :param arg: the JSON primitive to echo.
        """
        return {'service': self.service_name, 'arg': arg}
