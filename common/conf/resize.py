# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Resize and cold migration options, in ``[DEFAULT]`` as in Nova."""

from oslo_config import cfg

# NOTE: Nova keeps both in [DEFAULT]; so does Berth, so that an operator's
# nova.conf lines carry over unchanged (doc/behaviours.md, "resize and
# cold migration").
resize_opts = [
    cfg.BoolOpt('allow_resize_to_same_host', default=False, help="""
Allow a resize to choose the host the server already runs on.

By default the scheduler is told to ignore the server's own host when
it resizes, so a resize always moves the server. With this option the
source host stays a candidate and the scheduler may keep the server
where it is; both flavors are then counted on that host until the
resize is confirmed or reverted. A cold migration never stays on its
host, whatever this says.

Possible values:

* True: the source host may be chosen for a resize.
* False (default): it never is.

Related options:

* [filter_scheduler] enabled_filters: the server's own host must still
  pass them for the new flavor.
"""),
    cfg.IntOpt('resize_confirm_window', default=0, min=0, help="""
Seconds after which a resize or cold migration waiting in VERIFY_RESIZE
is confirmed automatically.

The compute service of the destination host looks at its finished moves
(as its last resource update read them) every minute, or at this
interval when it is shorter, and confirms those older than it as if the
user had sent ``confirmResize`` (a ``confirmResize`` action is
recorded): the source host's guest is removed and its allocation freed.
The move of a server no longer in VERIFY_RESIZE (its state reset) or
gone is set to ``error`` instead.

Possible values:

* 0 (default): never confirm automatically.
* A positive number of seconds.
"""),
]


def register_opts(conf):
    """Register the resize options in [DEFAULT]."""
    conf.register_opts(resize_opts)


def list_opts():
    """Options for the sample config."""
    return [('DEFAULT', resize_opts)]
