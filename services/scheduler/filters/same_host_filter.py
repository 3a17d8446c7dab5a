# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""SameHostFilter: the ``same_host`` scheduler hint."""

from services.scheduler import filters

HINT = 'same_host'


def hinted_uuids(spec_obj, hint):
    """The instance uuids of a hint as a list (a hint may be one string)."""
    value = spec_obj.get_scheduler_hint(hint)
    if not value:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


class SameHostFilter(filters.BaseHostFilter):
    """Pass hosts running one of the instances named by ``same_host``.

    ``--hint same_host=<uuid>`` (repeatable) asks for a host where one of
    those instances already runs, as recorded in ``host_state.instances``.
    Without the hint every host passes; with it, a uuid running nowhere
    leaves no host (NoValidHost), as in Nova.
    """

    # NOTE: the instances on a host are read once per request; the
    # instances of this request are not what the hint is about.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        """True without the hint or when a hinted instance is here."""
        uuids = hinted_uuids(spec_obj, HINT)
        if not uuids:
            return True
        if any(uuid in host_state.instances for uuid in uuids):
            return True
        return self.reject(host_state, 'runs none of the same_host '
                           'instances %s', ', '.join(uuids))
