# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[upgrade_levels]`` group: RPC version caps."""

from oslo_config import cfg

upgrade_levels_group = cfg.OptGroup(
    'upgrade_levels', title='RPC version caps',
    help="""
Caps on the RPC versions a service's clients send, for rolling upgrades.

While some services still run the older release, cap the newer clients at
the version (or release) the oldest server understands; lift the cap once
every service is upgraded.

Until Berth's first release every RPC API is at 1.0 and changes in place,
so there is nothing to cap yet: leave these unset and upgrade every host
together. They take effect with the first release, whose APIs later
releases extend with additive minor versions.
""")


def _cap(name):
    return cfg.StrOpt(name, help="""
The highest RPC version clients send to the %(name)s service.

Until the first release the only version is 1.0; see the group's help.

Possible values:

* Unset (the default): no cap, send the newest version.
* A version string such as ``1.3``.
* A release alias (for example ``2026.1``) known to the %(name)s RPC API,
  which maps it to that release's version.

Related options:

* A method newer than the cap fails on the client with an
  ``RPCVersionCapError`` instead of reaching an older server.
""" % {'name': name})


upgrade_levels_opts = [_cap('scheduler'), _cap('conductor'), _cap('compute')]


def register_opts(conf):
    """Register the [upgrade_levels] options."""
    conf.register_group(upgrade_levels_group)
    conf.register_opts(upgrade_levels_opts, group=upgrade_levels_group)


def list_opts():
    """Options for the sample config."""
    return [(upgrade_levels_group, upgrade_levels_opts)]
