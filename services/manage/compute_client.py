# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The compute REST API as berth-manage's ``host drain`` calls it.

A keystoneauth adapter built from ``[compute_api]``
(common/conf/compute_api.py), one microversion on every call, a timeout
on every call, JSON in and out. Each method is one call (or one listing
followed page by page) and returns the API's body; an error answer is an
:class:`APIError` carrying Nova's message, a call that gets no answer is
:class:`Unreachable`. What to make of them is the caller's
(services/manage/drain_moves.py).
"""

import logging
import re
import urllib.parse

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading

from common.conf import compute_api as compute_api_conf

LOG = logging.getLogger(__name__)

# NOTE: the newest behaviour the drain relies on: 2.53 services by uuid,
# 2.56 a cold migration's target host, 2.59 migration uuids and pages of
# os-migrations. (2.25 made live migration's block_migration 'auto', 2.34
# made os-migrateLive answer at once.)
MICROVERSION = '2.59'
#: Seconds a call may take unless ``[compute_api] timeout`` says: the
#: API answers a cold migration only once the conductor has scheduled it
#: (bounded there by ``rpc_response_timeout``, 60 s by default).
DEFAULT_TIMEOUT = 90.0
COMPUTE_BINARY = 'nova-compute'
_TRACEBACK_END = re.compile(r'^[\w.]+: (.+)$')


class NotConfigured(Exception):
    """``[compute_api]`` does not say where the compute API is."""

    def __init__(self):
        super().__init__(
            'berth-manage reaches the compute API through the '
            '[compute_api] group of its configuration file, which names no '
            'endpoint: set auth_type and its credentials (the keystone '
            'catalog gives the endpoint), or endpoint_override (the API\'s '
            '/v2.1 URL) with auth_type = admin_token and token = admin '
            'for noauth2 (see doc/operations.md, "Draining a host").')


class Unreachable(Exception):
    """A call got no answer; the message says which and why."""


class APIError(Exception):
    """The API answered an error.

    :ivar status: the HTTP status.
    :ivar message: Nova's message (the error body's ``message``).
    """

    def __init__(self, method, path, status, message):
        super().__init__('%s %s answered %d: %s'
                         % (method, path, status, message))
        self.status = status
        self.message = message


def _message(resp):
    """Nova's message of an error answer ({"badRequest": {"message"}})."""
    try:
        body = resp.json()
    except ValueError:
        return (resp.text or '').strip()[:300]
    if isinstance(body, dict) and len(body) == 1:
        inner = next(iter(body.values()))
        if isinstance(inner, dict) and 'message' in inner:
            return inner['message']
    return str(body)[:300]


def _adapter(conf):
    """The keystoneauth adapter of ``[compute_api]``.

    :raises NotConfigured: the group names no endpoint.
    """
    if not compute_api_conf.is_configured(conf):
        raise NotConfigured()
    group = compute_api_conf.GROUP
    auth = ks_loading.load_auth_from_conf_options(conf, group)
    session = ks_loading.load_session_from_conf_options(conf, group,
                                                        auth=auth)
    return ks_loading.load_adapter_from_conf_options(
        conf, group, session=session, auth=auth)


class ComputeAPI(object):
    """The calls of a drain, shared by its threads.

    :param conf: the ConfigOpts with ``[compute_api]``.
    :param adapter: a ready adapter (tests); built from ``conf`` if None.
    """

    def __init__(self, conf, adapter=None):
        self._adapter = adapter or _adapter(conf)
        self.timeout = conf[compute_api_conf.GROUP].timeout or \
            DEFAULT_TIMEOUT

    def request(self, method, path, body=None, params=None,
                expect=(200, 202, 204)):
        """One call; the decoded JSON body (None when empty).

        :raises APIError: any status not in ``expect``.
        :raises Unreachable: no answer (connection, timeout, no endpoint).
        """
        resp = self._send(method, path, body, params)
        if resp.status_code not in expect:
            raise APIError(method, path, resp.status_code, _message(resp))
        return resp.json() if resp.content else None

    def _send(self, method, path, body, params):
        headers = {'Accept': 'application/json',
                   'OpenStack-API-Version': 'compute %s' % MICROVERSION}
        try:
            return self._adapter.request(
                path, method, json=body, params=params, headers=headers,
                raise_exc=False, timeout=self.timeout)
        except ks_exc.ClientException as exc:
            raise Unreachable('the compute API did not answer %s %s: %s'
                              % (method, path, exc))

    def _pages(self, path, key, params):
        """Every item of a paged listing (``<key>_links`` next links)."""
        found = []
        params = dict(params)
        while True:
            body = self.request('GET', path, params=params)
            found.extend(body[key])
            following = [link['href'] for link in
                         body.get('%s_links' % key) or ()
                         if link.get('rel') == 'next']
            if not following or not body[key]:
                return found
            query = urllib.parse.parse_qs(
                urllib.parse.urlsplit(following[0]).query)
            params['marker'] = query['marker'][-1]

    # --- services -----------------------------------------------------

    def compute_service(self, host):
        """The compute service of ``host`` (os-services view), or None."""
        services = self.request('GET', '/os-services', params={
            'binary': COMPUTE_BINARY, 'host': host})['services']
        found = [s for s in services if s['host'] == host]
        return found[0] if found else None

    def disable_service(self, service_id, reason):
        """Disable a service (by uuid) with ``reason``; its new view."""
        return self.request('PUT', '/os-services/%s' % service_id, {
            'status': 'disabled', 'disabled_reason': reason})['service']

    # --- servers ------------------------------------------------------

    def servers_on(self, host):
        """Every server (of every project) whose host is ``host``."""
        return self._pages('/servers/detail', 'servers',
                           {'host': host, 'all_tenants': '1'})

    def get_server(self, uuid):
        """The server ``uuid``, or None once it is gone (404)."""
        try:
            return self.request('GET', '/servers/%s' % uuid)['server']
        except APIError as exc:
            if exc.status == 404:
                return None
            raise

    def _action(self, uuid, body, expect=(202,)):
        return self.request('POST', '/servers/%s/action' % uuid, body,
                            expect=expect)

    def live_migrate(self, uuid, host):
        """``os-migrateLive`` to ``host`` (the scheduler checks it)."""
        self._action(uuid, {'os-migrateLive': {
            'host': host, 'block_migration': 'auto'}})

    def migrate(self, uuid, host):
        """``migrate`` (cold) to ``host``; answered once scheduled."""
        self._action(uuid, {'migrate': {'host': host}})

    def confirm_resize(self, uuid):
        """``confirmResize``: the source's guest and allocation go."""
        self._action(uuid, {'confirmResize': None}, expect=(204,))

    # --- what happened ------------------------------------------------

    def migrations(self, **filters):
        """os-migrations with ``filters`` (source_compute, status,
        instance_uuid...), newest first.
        """
        return self._pages('/os-migrations', 'migrations', filters)

    def last_error(self, uuid):
        """The message of the server's latest failed action event, or
        None: what a move that ended on its source left as the reason.
        """
        actions = self.request('GET', '/servers/%s/os-instance-actions'
                               % uuid)['instanceActions']
        for action in actions:
            shown = self.request('GET', '/servers/%s/os-instance-actions/%s'
                                 % (uuid, action['request_id']))
            for event in shown['instanceAction'].get('events') or ():
                if event.get('result') == 'Error':
                    return _traceback_message(event.get('traceback'))
            return None
        return None


def _traceback_message(text):
    """The exception's message: the last line of a traceback, without
    the exception's class path.
    """
    lines = [line for line in (text or '').splitlines() if line.strip()]
    if not lines:
        return None
    last = lines[-1].strip()
    match = _TRACEBACK_END.match(last)
    return match.group(1) if match else last
