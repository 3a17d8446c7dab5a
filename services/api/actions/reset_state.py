# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server action os-resetState (admin): force vm_state active or error.

Nova's way out for a server an operator knows better about: the
vm_state becomes ``active`` or ``error`` and the task state is cleared,
whatever they were, in one write that also records the instance action
``resetState``. Nothing is cast to the compute host and the lock is not
checked. 202.
"""

from services.api.actions import checks
from services.api.schemas import server_actions as schemas
from services.api import util

ACTION = 'resetState'


def reset_state(req, value):
    """``os-resetState`` {state: active|error}: see module doc."""
    util.validate({'os-resetState': value}, schemas.RESET_STATE)
    instance, cell = checks.find(req,
                                 'os_compute_api:os-admin-actions:reset_state')
    checks.begin(req, instance, cell, 'os-resetState', ACTION,
                 {'vm_state': value['state'], 'task_state': None},
                 expected_task_state=None)
    return util.no_content(202)


ACTIONS = {'os-resetState': reset_state}
