# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The availability zone a host is in, as an instance records it.

A zone is a host aggregate with ``availability_zone`` metadata. A host in
no such aggregate is in ``[DEFAULT] default_availability_zone``; a host in
several gets their names joined with commas in name order, as upstream
shows it. The scheduler (from its host states) and the conductor (from
the api database) name zones by this one rule.
"""

import common.conf

CONF = common.conf.CONF
AZ_KEY = 'availability_zone'


def zone_name(names):
    """The zone of a host whose zone aggregates are named ``names``."""
    return ','.join(sorted(names)) if names else \
        CONF.default_availability_zone
