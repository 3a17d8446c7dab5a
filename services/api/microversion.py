# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Compute microversions: the one list of versions and their parsing.

A request names its version in ``OpenStack-API-Version: compute X.Y`` or,
as older clients do, ``X-OpenStack-Nova-API-Version: X.Y``; the first wins
when both are sent. Without either it gets 2.1; ``latest`` means the
maximum. A malformed version is a 400, one outside the list a 406.

The maximum is 2.95: every body this API writes has the shape it has at
that version in Nova (embedded flavors in servers, uuids as service and
hypervisor ids, server group ``policy`` and ``rules``, flavor
``extra_specs`` and ``description``, hypervisors without the usage fields
2.88 removed), and every version up to it has its behaviour (doc/api.md,
"Microversions 2.81 to 2.95"). Four of them change only resources Berth
does not have at any version: 2.85 and 2.89 (volume attachments: their
routes are 404), 2.87 (``rescue``: "There is no such action") and 2.93
(rebuilding a volume-backed server: booting from a volume is refused).
openstacksdk negotiates each resource down to this version, and the
``openstack`` CLI needs nothing newer for the commands Berth serves.

The negotiation itself is :mod:`common.wsgi.microversion`'s.
"""

from common.wsgi import microversion as wsgi_microversion

SERVICE_TYPE = 'compute'
HEADER = 'openstack-api-version'
LEGACY_HEADER = 'x-openstack-nova-api-version'
ENV_KEY = 'berth.compute.microversion'

# The canonical list: what each version changed in the APIs Berth serves.
# A guard test keeps it contiguous; the version documents report its ends.
VERSIONS = [
    '2.1',   # Initial v2.1 API
    '2.2',   # keypair types
    '2.3',   # more OS-EXT-SRV-ATTR server attributes for admins
    '2.4',   # reserved volume attachments
    '2.5',   # ip6 in server search
    '2.6',   # remote consoles
    '2.7',   # flavor access on public flavors is a 409
    '2.8',   # mks consoles
    '2.9',   # locked in server bodies
    '2.10',  # user_id on keypairs
    '2.11',  # os-services forced_down
    '2.12',  # vif net_id
    '2.13',  # server group user_id and project_id
    '2.14',  # evacuate without on_shared_storage
    '2.15',  # soft-affinity and soft-anti-affinity server groups
    '2.16',  # host_status in server bodies
    '2.17',  # trigger crash dump
    '2.18',  # project_id optional in URLs
    '2.19',  # server description
    '2.20',  # volume operations on shelved servers
    '2.21',  # deleted instances' actions
    '2.22',  # force live migration completion
    '2.23',  # migration types
    '2.24',  # abort live migration
    '2.25',  # block_migration auto
    '2.26',  # server tags
    '2.27',  # OpenStack-API-Version header
    '2.28',  # hypervisor cpu_info as an object
    '2.29',  # evacuate force
    '2.30',  # live-migrate force
    '2.31',  # serial console port
    '2.32',  # device tags
    '2.33',  # hypervisor paging
    '2.34',  # async live-migration checks
    '2.35',  # keypair paging
    '2.36',  # proxy APIs deprecated; quotas without network resources
    '2.37',  # networks required on server create (auto / none)
    '2.38',  # invalid status filters are 400
    '2.39',  # image metadata quota removed from limits
    '2.40',  # usage paging
    '2.41',  # aggregate uuid
    '2.42',  # device tags again
    '2.43',  # os-hosts deprecated
    '2.44',  # network proxies deprecated
    '2.45',  # createImage returns image_id only
    '2.46',  # request id in instance actions events
    '2.47',  # embedded flavor in server bodies
    '2.48',  # diagnostics format
    '2.49',  # tagged volume attach
    '2.50',  # server_groups and server_group_members quota classes
    '2.51',  # volume-extended event
    '2.52',  # tags on create
    '2.53',  # services and hypervisors identified by uuid
    '2.54',  # rebuild key pair
    '2.55',  # flavor description
    '2.56',  # cold migration target host
    '2.57',  # personality files removed
    '2.58',  # instance action updated_at and paging
    '2.59',  # migrations paging
    '2.60',  # multiattach volumes
    '2.61',  # extra_specs in flavor bodies
    '2.62',  # host and hostId in action events
    '2.63',  # trusted image certificates
    '2.64',  # server group policy and rules
    '2.65',  # abort queued live migrations
    '2.66',  # changes-before filter
    '2.67',  # volume_type in block device mappings
    '2.68',  # no forced evacuate or live migrate
    '2.69',  # partial results with down cells
    '2.70',  # device tags in interface and volume lists
    '2.71',  # server_groups in server show
    '2.72',  # resource requests on ports
    '2.73',  # locked_reason
    '2.74',  # host and hypervisor_hostname on server create
    '2.75',  # consistent server bodies
    '2.76',  # power-update event
    '2.77',  # unshelve availability zone
    '2.78',  # server topology
    '2.79',  # delete_on_termination on volume attach
    '2.80',  # user_id and project_id of migrations (fields, filters)
    '2.81',  # image pre-caching on the hosts of an aggregate
    '2.82',  # accelerator-request-bound event
    '2.83',  # more server list filters for non-admins
    '2.84',  # details of failed instance action events
    '2.85',  # delete_on_termination on volume attachment update (no volumes)
    '2.86',  # flavor extra specs validated with Nova's rules and messages
    '2.87',  # rescue of volume-backed servers (no rescue)
    '2.88',  # hypervisor usage fields, statistics and uptime routes removed
    '2.89',  # attachment_id and bdm_uuid of volume attachments (no volumes)
    '2.90',  # hostname on create, update and rebuild
    '2.91',  # unshelve to a host; availability_zone null unpins
    '2.92',  # key pairs imported only; '@' and '.' in names
    '2.93',  # volume-backed rebuild (no volume-backed servers)
    '2.94',  # FQDN hostnames
    '2.95',  # evacuated servers end stopped
]


Version = wsgi_microversion.Version
MicroversionError = wsgi_microversion.MicroversionError
parse = wsgi_microversion.parse

MIN_VERSION = parse(VERSIONS[0])
MAX_VERSION = parse(VERSIONS[-1])


def _is_latest(text):
    # NOTE: Nova takes "latest" in any case and with spaces around it.
    return text.strip().lower() == 'latest'


def from_headers(headers):
    """The Version a request asks for.

    :param headers: the request headers (case-insensitive mapping).
    :raises MicroversionError: 400 for a malformed version, 406 for one
        outside [MIN_VERSION, MAX_VERSION].
    """
    text = None
    value = headers.get(HEADER)
    if value:
        text = wsgi_microversion.service_value(value, SERVICE_TYPE)
    if text is None:
        text = headers.get(LEGACY_HEADER)
    return wsgi_microversion.negotiate(
        text, MIN_VERSION, MAX_VERSION,
        malformed='API Version String {text} is of invalid format. Must be '
                  'of format MajorNum.MinorNum.',
        unacceptable='Version {text} is not supported by the API. Minimum '
                     'is {min} and maximum is {max}.',
        is_latest=_is_latest)


def response_headers(version):
    """The version headers every compute API response carries.

    Both the standard header and Nova's legacy one, for older clients.
    """
    return [('OpenStack-API-Version', '%s %s' % (SERVICE_TYPE, version)),
            ('X-OpenStack-Nova-API-Version', str(version)),
            ('Vary', 'OpenStack-API-Version, X-OpenStack-Nova-API-Version')]
