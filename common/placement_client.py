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

import logging
import os
import threading

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
import orjson

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
    names = {name.lower() for name in os.environ}
    if any(name.endswith('_proxy') for name in names) or 'netrc' in names:
        return
    home = os.path.expanduser('~')
    if any(os.path.exists(os.path.join(home, name))
           for name in ('.netrc', '_netrc')):
        return
    bundle = (os.environ.get('REQUESTS_CA_BUNDLE') or
              os.environ.get('CURL_CA_BUNDLE'))
    if bundle and session.verify is True:
        session.verify = bundle
    session.session.trust_env = False


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
        kwargs = {'headers': headers, 'raise_exc': False,
                  'timeout': timeout or self._conf.placement.timeout or
                  DEFAULT_TIMEOUT}
        if body is not None:
            kwargs['json'] = body
        try:
            resp = self._get_adapter().request(url, method, **kwargs)
        except ks_exc.ClientException as exc:
            raise PlacementUnavailable('%s %s failed: %s' % (method, url, exc))
        if resp.status_code >= 500:
            raise PlacementUnavailable('%s %s answered %d: %s' % (
                method, url, resp.status_code, resp.text[:500]))
        data = None
        if resp.content and 'json' in resp.headers.get('content-type', ''):
            # NOTE: candidate lists run to hundreds of KiB; orjson decodes
            # them faster than requests' json().
            data = orjson.loads(resp.content)
        return Response(resp.status_code, data, resp.headers)

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
