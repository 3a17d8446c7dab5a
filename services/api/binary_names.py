# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Berth's service binaries under the names Nova's clients look for.

Services record themselves as ``berth-<role>``; the compute API shows
them as ``nova-<role>`` when ``[api] service_binary_names = nova`` (the
default, doc/operations.md) and accepts either name in filters, so that
tools written for Nova (``?binary=nova-compute``) find Berth's hosts.
"""

BERTH_PREFIX = 'berth-'
NOVA_PREFIX = 'nova-'


def shown(conf, binary):
    """``binary`` (a record's) as the API reports it."""
    if (conf.api.service_binary_names == 'nova' and binary
            and binary.startswith(BERTH_PREFIX)):
        return NOVA_PREFIX + binary[len(BERTH_PREFIX):]
    return binary


def internal(binary):
    """The record name a ``binary`` filter means (Nova's or Berth's)."""
    if binary and binary.startswith(NOVA_PREFIX):
        return BERTH_PREFIX + binary[len(NOVA_PREFIX):]
    return binary
