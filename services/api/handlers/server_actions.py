# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""POST /servers/{server_id}/action: one route for every server action.

The body names one action and carries its arguments
(``{"os-stop": null}``, ``{"reboot": {"type": "SOFT"}}``); the handler
looks the name up in :data:`services.api.actions.ACTIONS` and hands the
request and the action's value over. Each kind of action lives in its own
module of :mod:`services.api.actions`, which validates its own body,
checks policy and state and answers.
"""

from services.api import actions
from services.api import errors
from services.api import util

# NOTE: one action per request, as Nova dispatches them; the action's own
# value is validated by its module.
ENVELOPE = {
    'type': 'object',
    'minProperties': 1,
    'maxProperties': 1,
}


def server_action(req):
    """POST /servers/{server_id}/action: run the action the body names.

    :raises errors.BadRequest: no body, more than one action, or an
        action Berth does not know ("There is no such action", as Nova).
    """
    body = util.extract_json(req, ENVELOPE)
    name, value = next(iter(body.items()))
    handler = actions.ACTIONS.get(name)
    if handler is None:
        raise errors.BadRequest('There is no such action: %s' % name)
    return handler(req, value)
