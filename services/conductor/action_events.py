# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The conductor's own event of a server's instance action.

Each workflow (rebuild, migrate, live migrate, evacuate, unshelve) opens
its ``conductor_*`` event when it starts and closes it with ``Success``
or ``Error`` (and the traceback) when it ends, as Nova's conductor does.
"""

import logging

from common.db import action_records

LOG = logging.getLogger(__name__)


def record(ctxt, database, instance_uuid, event, host, phase, result=None,
           tb=None):
    """Start (``phase`` 'start') or finish ``event`` of the server's
    newest action.

    NOTE: an event that cannot be written is logged, never raised: the
    workflow's own outcome matters more than its bookkeeping.
    """
    try:
        if phase == 'start':
            action_records.action_event_start(ctxt, database,
                                              instance_uuid, event, host)
        else:
            action_records.action_event_finish(
                ctxt, database, instance_uuid, event, host, result, tb)
    except Exception as exc:
        LOG.warning('Could not record event %s %s of instance %s: %s',
                    event, phase, instance_uuid, exc)
