# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Placement microversions: the one list of versions and their parsing.

A request names its version in ``OpenStack-API-Version: placement X.Y``;
without one it gets the minimum, 1.0. ``latest`` means the maximum. A
version outside the list is refused with 406, a malformed one with 400.
The negotiation itself is :mod:`common.wsgi.microversion`'s.
"""

from common.wsgi import microversion as wsgi_microversion

SERVICE_TYPE = 'placement'
HEADER = 'openstack-api-version'
ENV_KEY = 'placement.microversion'

# The canonical list. Each entry is what that version added; a guard test
# keeps it contiguous, and the root document reports its ends.
VERSIONS = [
    '1.0',   # Initial API
    '1.1',   # Resource provider aggregates
    '1.2',   # Custom resource classes
    '1.3',   # member_of on GET /resource_providers
    '1.4',   # resources on GET /resource_providers
    '1.5',   # DELETE /resource_providers/{uuid}/inventories
    '1.6',   # Traits
    '1.7',   # PUT /resource_classes/{name} creates, no body
    '1.8',   # project_id and user_id required on PUT /allocations
    '1.9',   # GET /usages
    '1.10',  # GET /allocation_candidates
    '1.11',  # provider links to allocations
    '1.12',  # PUT /allocations/{c} takes a dict keyed by provider
    '1.13',  # POST /allocations for many consumers
    '1.14',  # nested providers: parent and root uuids, in_tree
    '1.15',  # Last-Modified and cache-control headers
    '1.16',  # limit on GET /allocation_candidates
    '1.17',  # required traits on GET /allocation_candidates
    '1.18',  # required traits on GET /resource_providers
    '1.19',  # provider aggregates carry and check the generation
    '1.20',  # POST /resource_providers returns the provider
    '1.21',  # member_of on GET /allocation_candidates
    '1.22',  # forbidden traits
    '1.23',  # error codes in error bodies
    '1.24',  # repeated member_of: AND of ORs
    '1.25',  # granular resource request groups
    '1.26',  # inventory reserved may equal total
    '1.27',  # provider summaries list all resources
    '1.28',  # consumer generations
    '1.29',  # nested providers in allocation candidates
    '1.30',  # POST /reshaper
    '1.31',  # in_tree on GET /allocation_candidates
    '1.32',  # forbidden aggregates with member_of=!
    '1.33',  # request group suffixes may be strings
    '1.34',  # mappings in allocation requests
    '1.35',  # root_required on GET /allocation_candidates
    '1.36',  # same_subtree on GET /allocation_candidates
    '1.37',  # re-parenting and un-parenting providers
    '1.38',  # consumer types
    '1.39',  # any-traits with required=in:
]


Version = wsgi_microversion.Version
MicroversionError = wsgi_microversion.MicroversionError


def _parse(text):
    # NOTE: laxer than the compute API's parse(), as placement has always
    # been: int() takes the parts as they come.
    major, minor = text.split('.')
    return Version(int(major), int(minor))


MIN_VERSION = _parse(VERSIONS[0])
MAX_VERSION = _parse(VERSIONS[-1])


def from_headers(headers):
    """The Version a request asks for.

    :param headers: the request headers (case-insensitive mapping).
    :raises MicroversionError: 400 for a malformed version, 406 for one this
        service does not provide.
    """
    value = headers.get(HEADER)
    text = wsgi_microversion.service_value(
        value, SERVICE_TYPE) if value else None
    return wsgi_microversion.negotiate(
        text, MIN_VERSION, MAX_VERSION,
        malformed='invalid version string: {text}',
        unacceptable='Unacceptable version header: {text}',
        parser=_parse)


def response_headers(version):
    """The version headers every placement response carries."""
    return [('OpenStack-API-Version', '%s %s' % (SERVICE_TYPE, version)),
            ('Vary', HEADER)]
