# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Exceptions shared across services.

HTTP APIs map these onto status codes; RPC servers list them as expected
exceptions so that callers get the reason, not a traceback.
"""


class BerthException(Exception):
    """Base of Berth's exceptions: a message template with keyword values."""

    msg_fmt = 'An unknown error occurred.'

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError):
                message = self.msg_fmt
        self.message = message
        super().__init__(message)

    def __str__(self):
        return self.message


class ConfigurationError(BerthException):
    msg_fmt = 'Invalid configuration: %(reason)s'


class DBNotConfigured(ConfigurationError):
    msg_fmt = 'No connection is configured for the %(name)s database.'


class NoValidHost(BerthException):
    """No host can take a request; carries the scheduler's explanation.

    Defined here, in a module every RPC client accepts remote exceptions
    from, so that the conductor and the API receive it with its
    explanation intact.
    """

    msg_fmt = 'No valid host was found. %(reason)s'

    def __init__(self, message=None, reason='', explanation=None, **kwargs):
        # NOTE: oslo.messaging rebuilds a remote exception as
        # ``cls(*exc.args, **exc.kwargs)``: the formatted message comes
        # back positionally, reason and explanation as keywords.
        super().__init__(message, reason=reason,
                         explanation=explanation or {}, **kwargs)
        self.reason = reason
        self.explanation = explanation or {}


class NotFound(BerthException):
    msg_fmt = 'Resource could not be found.'


class ServiceNotFound(NotFound):
    msg_fmt = 'Service %(binary)s on host %(host)s could not be found.'


# --- instances, mappings and the build flow (conductor, API, manage) -------

class InstanceNotFound(NotFound):
    msg_fmt = 'Instance %(instance_id)s could not be found.'


class UnexpectedTaskStateError(BerthException):
    """An update guarded by ``expected_task_state`` found another state.

    NOTE: the compare-and-swap that keeps two actors (a delete and a
    build, say) from both acting on one instance.
    """

    msg_fmt = ('Conflict updating instance %(instance_uuid)s. Expected: '
               '%(expected)s. Actual: %(actual)s')


class InstanceMappingNotFound(NotFound):
    msg_fmt = 'Instance %(uuid)s has no instance mapping.'


class RequestSpecNotFound(NotFound):
    msg_fmt = 'RequestSpec not found for instance %(instance_uuid)s'


class HostMappingNotFound(NotFound):
    msg_fmt = 'Host %(name)s is not mapped to any cell'


class HostMappingExists(BerthException):
    msg_fmt = 'Host %(name)s is already mapped to cell %(cell_uuid)s'


class MaxRetriesExceeded(NoValidHost):
    """Every host a build could use failed it; no reschedule is left."""

    msg_fmt = '%(reason)s'


class InstanceGroupNotFound(NotFound):
    msg_fmt = 'Instance group %(group_uuid)s could not be found.'


class MigrationNotFound(NotFound):
    msg_fmt = 'Migration %(migration_id)s could not be found.'


class MigrationNotFoundForInstance(MigrationNotFound):
    msg_fmt = ('Migration %(migration_id)s not found for instance '
               '%(instance_id)s')


class UnexpectedMigrationStatusError(BerthException):
    msg_fmt = ('Conflict updating migration %(migration_id)s. Expected '
               'status: %(expected)s. Actual: %(actual)s')


# --- live migration (doc/behaviours.md §live migration) ----------------------

class ComputeHostNotFound(NotFound):
    msg_fmt = 'Compute host %(host)s could not be found.'


class ComputeServiceUnavailable(BerthException):
    msg_fmt = 'Compute service of %(host)s is unavailable at this time.'


class UnableToMigrateToSelf(BerthException):
    msg_fmt = ('Unable to migrate instance (%(instance_id)s) to current '
               'host (%(host)s).')


class MigrationPreCheckError(BerthException):
    msg_fmt = 'Migration pre-check error: %(reason)s'


class InvalidMigrationState(BerthException):
    msg_fmt = ('Migration %(migration_id)s state of instance '
               '%(instance_uuid)s is %(state)s. Cannot %(method)s while the '
               'migration is in this state.')


class MigrationError(BerthException):
    msg_fmt = 'Migration error: %(reason)s'
