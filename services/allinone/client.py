# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A small JSON-over-HTTP client of the compute API, for the demo.

The demo drives Berth the way a user does, through the REST API only, so
that what it shows is what ``openstack server create`` would get. Standard
library only (the all-in-one must run with Berth's own requirements), one
timeout on every request, the noauth2 token as the caller's identity.
"""

import json
import logging
import urllib.error
import urllib.request

LOG = logging.getLogger(__name__)

# NOTE: the newest compute microversion the demo relies on (2.47 shows the
# flavor inside a server; fault details for admins are older).
COMPUTE_VERSION = '2.79'
TIMEOUT = 30


class APIError(Exception):
    """An unexpected answer; the message holds the method, path and body."""

    def __init__(self, method, url, status, body):
        super().__init__('%s %s answered %s: %s' % (method, url, status,
                                                    str(body)[:800]))
        self.status = status
        self.body = body


class ComputeClient(object):
    """The compute API as user ``token`` sees it (noauth2)."""

    def __init__(self, base_url, token='admin', timeout=TIMEOUT):
        """
        :param base_url: ``http://host:port`` of berth-api.
        :param token: the noauth2 token: ``admin`` or ``user:project``.
        """
        self.base_url = base_url.rstrip('/')
        self.token = token
        self.timeout = timeout

    def request(self, method, path, body=None, expect=(200, 201, 202, 204),
                prefix='/v2.1'):
        """One call; the decoded JSON body (None when empty).

        :raises APIError: for a status not in ``expect``.
        """
        url = self.base_url + prefix + path
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header('X-Auth-Token', self.token)
        req.add_header('Accept', 'application/json')
        req.add_header('OpenStack-API-Version',
                       'compute %s' % COMPUTE_VERSION)
        if data is not None:
            req.add_header('Content-Type', 'application/json')
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        payload = json.loads(raw) if raw else None
        if status not in expect:
            raise APIError(method, url, status, payload)
        return payload

    def get(self, path, **kwargs):
        """GET ``path`` (under /v2.1 unless ``prefix`` says otherwise)."""
        return self.request('GET', path, **kwargs)

    def post(self, path, body, **kwargs):
        """POST a JSON body."""
        return self.request('POST', path, body, **kwargs)
