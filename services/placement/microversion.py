# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Placement microversions: the one list of versions and their parsing.

A request names its version in ``OpenStack-API-Version: placement X.Y``;
without one it gets the minimum, 1.0. ``latest`` means the maximum. A
version outside the list is refused with 406, a malformed one with 400.
"""

import collections

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


class Version(collections.namedtuple('Version', 'major minor')):
    """A parsed microversion; compares with tuples, e.g. ``mv >= (1, 14)``."""

    def __str__(self):
        return '%d.%d' % (self.major, self.minor)

    def matches(self, min_version=None, max_version=None):
        """True when this version lies in [min_version, max_version]."""
        if min_version is not None and self < tuple(min_version):
            return False
        if max_version is not None and self > tuple(max_version):
            return False
        return True


def _parse(text):
    major, minor = text.split('.')
    return Version(int(major), int(minor))


MIN_VERSION = _parse(VERSIONS[0])
MAX_VERSION = _parse(VERSIONS[-1])


class MicroversionError(Exception):
    """A bad version header; ``status`` is 400 (malformed) or 406."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def _placement_value(header_value):
    """The placement entry of an OpenStack-API-Version header, or None."""
    for item in header_value.split(','):
        parts = item.strip().split(None, 1)
        if len(parts) == 2 and parts[0].lower() == SERVICE_TYPE:
            return parts[1].strip()
    return None


def from_headers(headers):
    """The Version a request asks for.

    :param headers: the request headers (case-insensitive mapping).
    :raises MicroversionError: 400 for a malformed version, 406 for one this
        service does not provide.
    """
    value = headers.get(HEADER)
    text = _placement_value(value) if value else None
    if text is None:
        return MIN_VERSION
    if text == 'latest':
        return MAX_VERSION
    try:
        version = _parse(text)
    except ValueError:
        raise MicroversionError(400, 'invalid version string: %s' % text)
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise MicroversionError(
            406, 'Unacceptable version header: %s' % text)
    return version
