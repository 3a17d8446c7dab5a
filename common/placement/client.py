# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The one HTTP client of the placement API for every Berth service.

:class:`PlacementClient` reads keystoneauth options from ``[placement]``
(auth, endpoint, TLS, timeouts), builds its session once, and sends the
common case over its own keep-alive connections
(:mod:`common.placement.connections`). It adds what every call needs: the
microversion header (the versions are :mod:`common.placement.microversions`'),
the global request id, a timeout on every call, and JSON in and out.

Callers use the methods of :class:`PlacementCalls` (``put_allocations``,
``get_provider_traits`` ...), which build the URLs and bodies, and
:func:`retry_conflicts` to repeat a read-modify-write that lost a
generation race. What to do with an answer stays with the caller (the
scheduler's claims, the compute agent's provider tree, the conductor's
audits): the methods return the :class:`Response` as placement gave it.
"""

import http.client
import json
import logging
import os
import sys
import threading
import urllib.parse

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
import orjson

from common.placement import connections

LOG = logging.getLogger(__name__)

GROUP = 'placement'
# NOTE: a placement call that takes longer than this is a sick placement;
# callers treat the timeout like any other failure and retry later.
DEFAULT_TIMEOUT = 30.0


# NOTE: the error code (microversion 1.23 on) of a write that carried a
# provider or consumer generation placement no longer holds.
CONCURRENT_UPDATE = 'placement.concurrent_update'


class PlacementUnavailable(Exception):
    """Placement could not be reached or answered with a server error."""


class GenerationConflict(Exception):
    """A write kept losing generation races; :func:`retry_conflicts` gave
    up.

    :ivar response: placement's last 409 answer.
    """

    def __init__(self, what, attempts, response):
        super().__init__(
            'Gave up updating %s: placement answered 409 (generation '
            'conflict) to all %d attempts; last: %s' % (
                what, attempts, response.error_detail()))
        self.response = response


class Response(object):
    """The parts of an HTTP answer callers use.

    :ivar method: the request's HTTP method (None from test doubles).
    :ivar url: the request's path and query below the endpoint.
    """

    def __init__(self, status, body, headers, method=None, url=None):
        self.status = status
        self.body = body
        self.headers = headers
        self.method = method
        self.url = url

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
    return Response(status, data, headers, method, url)


def _user_agent(adapter):
    """The session's User-Agent, else the program and keystoneauth's."""
    if adapter.session.user_agent:
        return adapter.session.user_agent
    program = os.path.basename(sys.argv[0]) if sys.argv else ''
    return ('%s %s' % (program, ks_session.DEFAULT_USER_AGENT)).strip()


def retry_conflicts(attempt, attempts, what):
    """Repeat a read-modify-write while placement refuses it with a 409.

    A write that carries a provider (or consumer) generation fails with
    409 when someone else wrote in between: a compute agent's periodic
    update, an operator, another API worker. The usual cure is to read
    again and write again, a few times; this is that loop, written once.

    :param attempt: a callable that reads what it needs, writes, and
        returns its result; or returns the write's 409 :class:`Response`
        to ask for another try (having re-read whatever it will need).
        An attempt that must not be repeated on some 409 (one that is no
        generation conflict) returns something else for it.
    :param attempts: how many tries in all (at least 1).
    :param what: what is written, for the error, e.g. ``'traits of
        provider <uuid>'``.
    :returns: what the last ``attempt()`` returned.
    :raises GenerationConflict: every try was refused with 409.
    """
    answer = None
    for number in range(1, attempts + 1):
        answer = attempt()
        if not (isinstance(answer, Response) and answer.status == 409):
            return answer
        LOG.debug('Generation conflict %d of %d updating %s: %s', number,
                  attempts, what, answer.error_detail())
    raise GenerationConflict(what, attempts, answer)


def retry_conflicts_or_warn(attempt, attempts, what, log):
    """:func:`retry_conflicts`, but give up with a warning, not an error.

    For writes a later run repairs (a periodic report, an aggregate
    mirror): running out of tries is logged on ``log`` and answered False.
    """
    try:
        return retry_conflicts(attempt, attempts, what)
    except GenerationConflict as exc:
        log.warning('%s', exc)
        return False


class PlacementCalls(object):
    """Placement's resources as methods, each one request over
    :meth:`request`.

    Every method returns placement's :class:`Response`; ``version`` is
    always one of :mod:`common.placement.microversions`. URLs take uuids
    and names as placement's own callers send them.
    """

    def request(self, method, url, version, context=None, body=None,
                timeout=None):
        """Send one request; return a :class:`Response` (subclasses)."""
        raise NotImplementedError()

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

    # --------------------------------------------- candidates, allocations

    def get_allocation_candidates(self, context, query, *, version):
        """``GET /allocation_candidates``.

        :param query: list of (name, value) query parameters; ':', ','
            and '!' stay readable in the URL (``required=in:A,B``).
        """
        return self.get('/allocation_candidates?' + urllib.parse.urlencode(
            query, safe=':,!'), version, context)

    def get_allocations(self, context, consumer_uuid, *, version):
        """``GET /allocations/{consumer}``."""
        return self.get('/allocations/%s' % consumer_uuid, version, context)

    def put_allocations(self, context, consumer_uuid, allocations,
                        project_id, user_id, consumer_generation=None,
                        consumer_type=None, *, version):
        """``PUT /allocations/{consumer}``: replace a consumer's
        allocations.

        :param allocations: provider uuid -> {'resources': {class: n}}.
        :param consumer_generation: the generation read, or None for a
            consumer placement must not know yet.
        :param consumer_type: sent only when given (1.38 on).
        """
        body = {'allocations': allocations, 'project_id': project_id,
                'user_id': user_id,
                'consumer_generation': consumer_generation}
        if consumer_type is not None:
            body['consumer_type'] = consumer_type
        return self.put('/allocations/%s' % consumer_uuid, body, version,
                        context)

    def delete_allocations(self, context, consumer_uuid, *, version):
        """``DELETE /allocations/{consumer}``."""
        return self.delete('/allocations/%s' % consumer_uuid, version,
                           context)

    # ----------------------------------------------------------- providers

    def list_providers(self, context, *, version, in_tree=None, name=None):
        """``GET /resource_providers``, of one tree or one name if given.
        """
        url = '/resource_providers'
        if in_tree is not None:
            url += '?in_tree=%s' % in_tree
        elif name is not None:
            url += '?name=%s' % urllib.parse.quote(name)
        return self.get(url, version, context)

    def get_provider(self, context, uuid, *, version):
        """``GET /resource_providers/{uuid}``."""
        return self.get('/resource_providers/%s' % uuid, version, context)

    def create_provider(self, context, uuid, name, parent_uuid=None, *,
                        version):
        """``POST /resource_providers``."""
        body = {'uuid': uuid, 'name': name}
        if parent_uuid:
            body['parent_provider_uuid'] = parent_uuid
        return self.post('/resource_providers', body, version, context)

    def update_provider(self, context, uuid, name, parent_uuid=None, *,
                        version):
        """``PUT /resource_providers/{uuid}``: rename or re-parent."""
        body = {'name': name}
        if parent_uuid:
            body['parent_provider_uuid'] = parent_uuid
        return self.put('/resource_providers/%s' % uuid, body, version,
                        context)

    def delete_provider(self, context, uuid, *, version):
        """``DELETE /resource_providers/{uuid}``."""
        return self.delete('/resource_providers/%s' % uuid, version,
                           context)

    def get_provider_allocations(self, context, uuid, *, version):
        """``GET /resource_providers/{uuid}/allocations``."""
        return self.get('/resource_providers/%s/allocations' % uuid,
                        version, context)

    def get_inventories(self, context, uuid, *, version):
        """``GET /resource_providers/{uuid}/inventories``."""
        return self.get('/resource_providers/%s/inventories' % uuid,
                        version, context)

    def get_provider_usages(self, context, uuid, *, version):
        """``GET /resource_providers/{uuid}/usages``."""
        return self.get('/resource_providers/%s/usages' % uuid, version,
                        context)

    def list_providers_with(self, context, resources, *, version):
        """``GET /resource_providers?resources=``: the providers that could
        each take ``resources`` ({class: amount}) now (1.4 on).
        """
        return self.get('/resource_providers?resources=' + ','.join(
            '%s:%d' % (rc, n) for rc, n in sorted(resources.items())),
            version, context)

    def put_inventories(self, context, uuid, generation, inventories, *,
                        version):
        """``PUT /resource_providers/{uuid}/inventories``.

        :param generation: the provider generation the inventories were
            computed from; placement answers 409 if it moved.
        """
        return self.put('/resource_providers/%s/inventories' % uuid, {
            'resource_provider_generation': generation,
            'inventories': inventories}, version, context)

    def get_provider_traits(self, context, uuid, *, version):
        """``GET /resource_providers/{uuid}/traits``."""
        return self.get('/resource_providers/%s/traits' % uuid, version,
                        context)

    def put_provider_traits(self, context, uuid, generation, traits, *,
                            version):
        """``PUT /resource_providers/{uuid}/traits``: the whole set.

        :param traits: the names, in the order to send (callers sort).
        """
        return self.put('/resource_providers/%s/traits' % uuid, {
            'resource_provider_generation': generation,
            'traits': traits}, version, context)

    def get_provider_aggregates(self, context, uuid, *, version):
        """``GET /resource_providers/{uuid}/aggregates``."""
        return self.get('/resource_providers/%s/aggregates' % uuid,
                        version, context)

    def put_provider_aggregates(self, context, uuid, generation,
                                aggregates, *, version):
        """``PUT /resource_providers/{uuid}/aggregates``: the whole set.
        """
        return self.put('/resource_providers/%s/aggregates' % uuid, {
            'aggregates': aggregates,
            'resource_provider_generation': generation}, version, context)

    # ------------------------------------------------ resource classes, traits

    def ensure_resource_class(self, context, name, *, version):
        """``PUT /resource_classes/{name}``: create it unless it exists."""
        return self.put('/resource_classes/%s' % name, None, version,
                        context)

    def ensure_trait(self, context, name, *, version):
        """``PUT /traits/{name}``: create it unless it exists."""
        return self.put('/traits/%s' % name, None, version, context)


class PlacementClient(PlacementCalls):
    """JSON over a keystoneauth adapter; safe to share between threads.

    One per process (or per service): the session, its token and the
    keep-alive connections are made once and reused by every call.
    """

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
        """The :class:`connections.DirectConnections`, or None."""
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
                    self._direct = connections.DirectConnections(
                        adapter, _user_agent(adapter))
                self._direct_checked = True
        return self._direct

    def request(self, method, url, version, context=None, body=None,
                timeout=None):
        """Send one request; return a :class:`Response`.

        :param version: the placement microversion, one of
            :mod:`common.placement.microversions`.
        :param context: the RequestContext, for the global request id.
        :param timeout: seconds; defaults to [placement] timeout or 30, so
            that no call waits on a sick placement for ever.
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
            except connections.Unsuitable as exc:
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
