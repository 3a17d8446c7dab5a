# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A thread-safe HTTP client of the placement API for every Berth service.

It reads keystoneauth options from ``[placement]`` (auth, endpoint, TLS,
timeouts) and adds what every caller needs: the microversion header, the
global request id, a timeout on every call, and JSON in and out. The
service-specific calls (the scheduler's candidates and claims, the compute
agent's provider tree) live with those services.
"""

import http.client
import json
import logging
import os
import sys
import threading

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
import orjson

from common import placement_http

LOG = logging.getLogger(__name__)

GROUP = 'placement'
# NOTE: a placement call that takes longer than this is a sick placement;
# callers treat the timeout like any other failure and retry later.
DEFAULT_TIMEOUT = 30.0


class PlacementUnavailable(Exception):
    """Placement could not be reached or answered with a server error."""


class Response(object):
    """The parts of an HTTP answer callers use."""

    def __init__(self, status, body, headers):
        self.status = status
        self.body = body
        self.headers = headers

    @property
    def ok(self):
        """True for a 2xx answer."""
        return 200 <= self.status < 300

    def error_code(self):
        """The placement error code of an error answer, or None."""
        try:
            return self.body['errors'][0].get('code')
        except (TypeError, KeyError, IndexError):
            return None

    def error_detail(self):
        """The detail text of an error answer, or the raw body."""
        try:
            return self.body['errors'][0].get('detail')
        except (TypeError, KeyError, IndexError):
            return self.body


def environment_needed():
    """True when requests would find proxies or a .netrc file to use."""
    names = {name.lower() for name in os.environ}
    if any(name.endswith('_proxy') for name in names) or 'netrc' in names:
        return True
    home = os.path.expanduser('~')
    return any(os.path.exists(os.path.join(home, name))
               for name in ('.netrc', '_netrc'))


def skip_environment_lookups(session):
    """Stop ``requests`` reading the environment again on every call.

    NOTE: a requests Session that trusts the environment scans every
    environment variable for proxies and looks for a .netrc file on each
    request: 0.6 ms a call here, a third of a claim. What it can find does
    not change while the service runs: without proxy variables or a netrc
    file, the only thing it uses is a CA bundle named by
    REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE in place of the default one, which
    is read here once. With proxies or netrc nothing changes.

    :param session: a keystoneauth Session.
    """
    if environment_needed():
        return
    bundle = (os.environ.get('REQUESTS_CA_BUNDLE') or
              os.environ.get('CURL_CA_BUNDLE'))
    if bundle and session.verify is True:
        session.verify = bundle
    session.session.trust_env = False


def _encode(body):
    if body is None:
        return None
    try:
        return orjson.dumps(body)
    except TypeError:
        # NOTE: orjson refuses what json accepts in a few corners
        # (non-string keys, integers beyond 64 bits); keep json's answer.
        return json.dumps(body).encode('utf-8')


def _response(method, url, status, headers, content):
    if status >= 500:
        raise PlacementUnavailable('%s %s answered %d: %s' % (
            method, url, status,
            content[:500].decode('utf-8', 'replace')))
    data = None
    if content and 'json' in (headers.get('content-type') or ''):
        # NOTE: candidate lists run to hundreds of KiB; orjson decodes
        # them faster than requests' json().
        data = orjson.loads(content)
    return Response(status, data, headers)


def _user_agent(adapter):
    """The session's User-Agent, else the program and keystoneauth's."""
    if adapter.session.user_agent:
        return adapter.session.user_agent
    program = os.path.basename(sys.argv[0]) if sys.argv else ''
    return ('%s %s' % (program, ks_session.DEFAULT_USER_AGENT)).strip()


class PlacementClient(object):
    """JSON over a keystoneauth adapter; safe to share between threads."""

    def __init__(self, conf, adapter=None):
        """
        :param conf: ConfigOpts with the [placement] options.
        :param adapter: a ready keystoneauth Adapter (tests), else built
            from the config on first use.
        """
        self._conf = conf
        self._adapter = adapter
        self._lock = threading.Lock()
        self._direct = None
        self._direct_checked = False

    def _get_adapter(self):
        if self._adapter is None:
            with self._lock:
                if self._adapter is None:
                    auth = ks_loading.load_auth_from_conf_options(
                        self._conf, GROUP)
                    session = ks_loading.load_session_from_conf_options(
                        self._conf, GROUP, auth=auth)
                    skip_environment_lookups(session)
                    self._adapter = ks_loading.load_adapter_from_conf_options(
                        self._conf, GROUP, session=session, auth=auth)
        return self._adapter

    def _get_direct(self):
        """The :class:`placement_http.DirectConnections`, or None."""
        if self._direct_checked:
            return self._direct
        adapter = self._get_adapter()
        with self._lock:
            if not self._direct_checked:
                # NOTE: test doubles of the adapter (in-process WSGI),
                # proxies and .netrc credentials stay on keystoneauth's path.
                if (self._conf.placement.direct_http and
                        isinstance(adapter, ks_adapter.Adapter) and
                        not environment_needed()):
                    self._direct = placement_http.DirectConnections(
                        adapter, _user_agent(adapter))
                self._direct_checked = True
        return self._direct

    def request(self, method, url, version, context=None, body=None,
                timeout=None):
        """Send one request; return a :class:`Response`.

        :param version: the placement microversion, e.g. '1.39'.
        :param context: the RequestContext, for the global request id.
        :param timeout: seconds; defaults to [placement] timeout or 30.
        :raises PlacementUnavailable: connection failure, timeout or 5xx.
        """
        headers = {'OpenStack-API-Version': 'placement %s' % version,
                   'Accept': 'application/json'}
        if context is not None and context.global_id:
            headers['X-OpenStack-Request-ID'] = context.global_id
        timeout = timeout or self._conf.placement.timeout or DEFAULT_TIMEOUT
        direct = self._get_direct()
        if direct is not None:
            try:
                status, reply_headers, content = direct.request(
                    method, url, headers, _encode(body), timeout)
            except placement_http.Unsuitable as exc:
                LOG.debug('%s %s through keystoneauth: %s', method, url, exc)
            except (OSError, http.client.HTTPException) as exc:
                raise PlacementUnavailable('%s %s failed: %s' % (
                    method, url, exc))
            else:
                return _response(method, url, status, reply_headers, content)
        kwargs = {'headers': headers, 'raise_exc': False, 'timeout': timeout}
        if body is not None:
            kwargs['json'] = body
        try:
            resp = self._get_adapter().request(url, method, **kwargs)
        except ks_exc.ClientException as exc:
            raise PlacementUnavailable('%s %s failed: %s' % (method, url, exc))
        return _response(method, url, resp.status_code, resp.headers,
                         resp.content)

    def get(self, url, version, context=None, **kwargs):
        """GET ``url``."""
        return self.request('GET', url, version, context, **kwargs)

    def put(self, url, body, version, context=None, **kwargs):
        """PUT ``body`` to ``url``."""
        return self.request('PUT', url, version, context, body=body, **kwargs)

    def post(self, url, body, version, context=None, **kwargs):
        """POST ``body`` to ``url``."""
        return self.request('POST', url, version, context, body=body,
                            **kwargs)

    def delete(self, url, version, context=None, **kwargs):
        """DELETE ``url``."""
        return self.request('DELETE', url, version, context, **kwargs)
