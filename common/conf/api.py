# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[api]`` group: how the HTTP APIs authenticate."""

from oslo_config import cfg

from common.conf import _http_server

api_group = cfg.OptGroup(
    'api', title='API options',
    help='Options shared by the HTTP APIs (placement and compute).')

api_opts = [
    cfg.StrOpt(
        'auth_strategy',
        default='keystone',
        choices=[
            ('keystone', 'Validate tokens with keystonemiddleware.'),
            ('noauth2', 'Development only: the X-Auth-Token header names '
                        'the caller. "admin" is an admin of project "admin"; '
                        '"user:project" is that user in that project.'),
        ],
        help="""
The authentication strategy of the HTTP APIs.

Possible values:

* keystone: production; configure [keystone_authtoken].
* noauth2: no real authentication. Never use it where the API is reachable
  by anybody you do not trust.
"""),
    # NOTE: the options below are the compute API's (berth-api) only.
    cfg.BoolOpt(
        'enable_instance_password',
        default=True,
        help="""
Return the server's administrator password (``adminPass``) in the
create-server response of the compute API, as Nova does.

The password is the request's ``adminPass``, or one generated with
[DEFAULT] password_length characters. Berth's compute drivers set no
password inside a guest, so a deployment whose images do not take the
password another way (config drive, cloud-init) may turn this off; clients
then see no ``adminPass``.

Related options:

* [DEFAULT] password_length: the length of generated passwords.
"""),
    cfg.HostAddressOpt(
        'bind_host', default='0.0.0.0',
        help="""
The address the compute API (``berth-api``) listens on.

A deployment behind uwsgi or gunicorn uses
``services.api.wsgi:application`` instead and ignores this.
"""),
    cfg.PortOpt(
        'bind_port', default=8774,
        help='The TCP port the compute API (``berth-api``) listens on.'),
    cfg.IntOpt(
        'threads', default=16, min=1,
        help="""
The number of request threads of the compute API's built-in server.

Each thread holds at most one connection per database at a time, so keep
[api_database] and [database] max_pool_size plus max_overflow at or above
this.
"""),
    cfg.IntOpt(
        'max_limit', default=1000, min=1,
        help="""
The most items one list request of the compute API returns.

Clients page through longer lists with ``limit`` and ``marker``.
"""),
    cfg.IntOpt(
        'max_servers_per_request', default=1000, min=1, max=2 ** 31 - 1,
        help="""
The most servers one multi-create request (``POST /servers`` with
``min_count``/``max_count``) of the compute API may ask for.

A request whose ``min_count`` or ``max_count`` is larger is refused with
400 before any record is built; quotas still apply below this bound.

Possible values:

* An integer from 1; the default 1000 covers any realistic batch.

Related options:

* [quota] instances and cores also bound what one project may boot.
"""),
    cfg.StrOpt(
        'service_binary_names',
        default='nova',
        choices=[
            ('nova', "Report Nova's names: nova-compute, nova-scheduler, "
                     'nova-conductor.'),
            ('berth', "Report Berth's own names: berth-compute, "
                      'berth-scheduler, berth-conductor.'),
        ],
        help="""
The binary names the compute API reports for Berth's services
(``os-services``).

Berth's processes record themselves as berth-compute, berth-scheduler and
berth-conductor. Tools written for Nova look hosts up by Nova's binary
names (``GET /os-services?binary=nova-compute``), so by default the API
shows each service under the Nova name of the same role. The ``binary``
filter accepts either name whatever this says; the records themselves
always keep Berth's names.

Possible values:

* nova: show nova-compute, nova-scheduler, nova-conductor (default).
* berth: show berth-compute, berth-scheduler, berth-conductor.
"""),
]


# NOTE: the request limits of berth-api's built-in server (and of the
# all-in-one's compute API); uwsgi has its own (etc/berth/).
api_server_opts = _http_server.server_opts(
    'berth-api', streamed="""
Image data uploads (``PUT /image/v2/images/{image_id}/file``) are streamed
to the image catalog: ``max_request_body_size`` does not bound them, and
``body_timeout`` bounds each read of their body.""")


def register_opts(conf):
    """Register the [api] options."""
    conf.register_group(api_group)
    conf.register_opts(api_opts + api_server_opts, group=api_group)


def list_opts():
    """Options for the sample config."""
    return [(api_group, api_opts + api_server_opts)]
