# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""keystoneauth client options for a group naming another service.

A group such as ``[placement]`` or ``[glance]`` tells Berth how to reach a
service: keystoneauth's session, auth and adapter options (``auth_type``,
``endpoint_override``, ``timeout``, ``valid_interfaces``...), as in a Nova
deployment (nova's ``conf/utils.py``). The leading underscore keeps this
helper out of the option-group discovery of :mod:`common.conf.opts`.
"""

from keystoneauth1 import loading as ks_loading


def client_opts():
    """The keystoneauth options of a client group, for the sample config.

    The auth plugin options listed are the ``password`` plugin's, the one
    a deployment usually names.
    """
    return (ks_loading.get_session_conf_options() +
            ks_loading.get_auth_common_conf_options() +
            ks_loading.get_auth_plugin_conf_options('password') +
            ks_loading.get_adapter_conf_options(include_deprecated=False))


def register_client_opts(conf, group, service_type):
    """Register keystoneauth's options on ``group`` of ``conf``.

    :param group: the OptGroup (already registered) or its name.
    :param service_type: the default ``service_type`` of the adapter.
    """
    name = getattr(group, 'name', group)
    ks_loading.register_session_conf_options(conf, name)
    ks_loading.register_auth_conf_options(conf, name)
    ks_loading.register_adapter_conf_options(conf, name,
                                             include_deprecated=False)
    conf.set_default('service_type', service_type, group=name)
    conf.set_default('valid_interfaces', ['internal', 'public'], group=name)
