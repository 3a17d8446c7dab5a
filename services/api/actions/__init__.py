# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server actions, one module per kind (power, lock, rebuild...).

Each module exports ``ACTIONS``: action name (the body's key, as Nova
names it) -> ``handler(req, value)`` returning the response. This package
joins them into the one table the action route dispatches on
(:mod:`services.api.handlers.server_actions`); a name claimed twice is a
programming error caught at import.
"""

from services.api.actions import evacuate
from services.api.actions import live_migrate
from services.api.actions import lock
from services.api.actions import power
from services.api.actions import rebuild
from services.api.actions import reset_state
from services.api.actions import resize
from services.api.actions import shelve
from services.api.actions import snapshot

MODULES = (power, lock, reset_state, rebuild, snapshot,
           # moves (issue 21)
           resize, live_migrate, shelve, evacuate)


def _join(modules):
    table = {}
    for module in modules:
        for name, handler in module.ACTIONS.items():
            if name in table:
                raise ValueError('Server action %s is defined twice' % name)
            table[name] = handler
    return table


ACTIONS = _join(MODULES)
