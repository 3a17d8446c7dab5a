# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-status upgrade check``: is this deployment ready to run?

    berth-status --config-file /etc/berth/berth.conf upgrade check [--json]

Run before (re)starting services on new code. Each check prints a result
in oslo.upgradecheck's table (or JSON with --json); the exit code is the
worst result: 0 success, 1 warning, 2 failure, 255 the command itself
failed. The checks (doc/operations.md):

* every database (api, cell0 and each cell, placement) at its newest
  schema revision;
* cell0 and at least one cell mapped;
* every compute host mapped to its cell;
* placement reachable and new enough for the microversions Berth uses;
* the policy file readable and its rules valid (and YAML, not JSON).
"""

import logging
import os
import sys

from alembic import config as alembic_config
from alembic import script as alembic_script
from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_policy import opts as policy_opts
from oslo_policy import policy as oslo_policy
from oslo_upgradecheck import upgradecheck
from oslo_utils import fileutils
import sqlalchemy as sa

from common.conf import CONF
from common import config
from common import context
from common.db import api_tables
from common.db import cells
from common.db import compute_records
from common import exception
from common.placement import client as placement_client
from common.placement import microversions
from services.api import policies as api_policies
from services.placement.db import api as placement_db_api

LOG = logging.getLogger(__name__)

Code = upgradecheck.Code
Result = upgradecheck.Result

PLACEMENT_MIGRATIONS = os.path.join(
    os.path.dirname(placement_db_api.__file__), 'migrations')

# NOTE: a dead database or placement answers in seconds, not minutes.
PLACEMENT_TIMEOUT = 10


def _ctxt():
    return context.get_admin_context()


def _version(text):
    return tuple(int(part) for part in text.split('.'))


def head_revision(migrations):
    """The newest revision of an alembic migrations directory."""
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location', migrations)
    return alembic_script.ScriptDirectory.from_config(cfg).get_current_head()


def needed_placement_version():
    """The newest placement microversion any Berth service sends."""
    return max(microversions.used().values(), key=_version)


def _error(exc):
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


class Checks(upgradecheck.UpgradeCommands):
    """Berth's upgrade checks over one ConfigOpts."""

    display_title = 'Upgrade Check Results'

    def __init__(self, conf=None, placement=None, api=None, registry=None,
                 placement_database=None):
        """
        :param conf: the ConfigOpts; the global CONF when not given.
        :param placement: a placement client; built from ``[placement]``
            when not given.
        :param api: the api Database; ``[api_database]``'s when not given.
        :param registry: the cell Databases registry.
        :param placement_database: the placement Database;
            ``[placement_database]``'s when not given and configured.
        """
        self.conf = conf or CONF
        self._placement = placement
        self._api_database = api
        self._cell_databases = registry
        self._placement_database = placement_database

    def _api(self):
        if self._api_database is None:
            self._api_database = cells.configure_api(self.conf)
        return self._api_database

    def _registry(self):
        if self._cell_databases is None:
            self._cell_databases = (cells.REGISTRY if self.conf is CONF
                                    else cells.CellDatabases(self.conf))
        return self._cell_databases

    def _placement_db(self):
        """The placement Database, or None where it is not configured."""
        if (self._placement_database is None and
                self.conf.placement_database.connection):
            placement_db_api.configure(self.conf)
            self._placement_database = placement_db_api.placement_db
        return self._placement_database

    def _mappings(self):
        return cells.get_cell_mappings(_ctxt(), self._api())

    # --- schema ------------------------------------------------------------

    def _databases(self):
        """[(label, Database, migrations dir)] of every database."""
        found = [('api', self._api(), cells.API_MIGRATIONS)]
        mappings = self._mappings()
        for mapping in sorted(mappings, key=lambda m: (not m.is_cell0,
                                                       m.id)):
            found.append((mapping.label, self._registry().get(mapping),
                          cells.CELL_MIGRATIONS))
        local = self.conf.database.connection
        if local and local not in {m.database_connection for m in mappings}:
            found.append(('[database] connection', self._registry().local(),
                          cells.CELL_MIGRATIONS))
        if self._placement_db() is not None:
            found.append(('placement', self._placement_db(),
                          PLACEMENT_MIGRATIONS))
        return found

    def _check_schemas(self):
        if self._api_database is None and \
                not self.conf.api_database.connection:
            return Result(Code.FAILURE, '[api_database] connection is not '
                          'set in the configuration file.')
        behind = []
        try:
            for label, database, migrations in self._databases():
                current = cells.cell_revision(database)
                head = head_revision(migrations)
                if current != head:
                    behind.append('%s is at %s, not %s' % (label, current,
                                                           head))
        except (db_exc.DBError, sa.exc.SQLAlchemyError,
                exception.DBNotConfigured) as exc:
            return Result(Code.FAILURE, 'A database could not be read: %s'
                          % _error(exc))
        if behind:
            return Result(Code.FAILURE, 'Database schemas are not at their '
                          'newest revision (%s). Run "berth-manage api_db '
                          'sync", "berth-manage db sync" and "berth-manage '
                          'placement db sync".' % '; '.join(behind))
        return Result(Code.SUCCESS)

    # --- cells -------------------------------------------------------------

    def _check_cells(self):
        try:
            mappings = self._mappings()
        except (db_exc.DBError, sa.exc.SQLAlchemyError,
                exception.DBNotConfigured) as exc:
            return Result(Code.FAILURE, 'The cell mappings could not be '
                          'read: %s' % _error(exc))
        if len(mappings) < 2:
            return Result(Code.FAILURE, 'There needs to be at least two cell '
                          'mappings, one for cell0 and one for your first '
                          'cell. Run command "berth-manage cell_v2 '
                          'simple_cell_setup" and then retry.')
        if not any(m.is_cell0 for m in mappings):
            return Result(Code.FAILURE, 'No cell0 mapping found. Run command '
                          '"berth-manage cell_v2 map_cell0" and then retry.')
        return Result(Code.SUCCESS)

    def _unmapped_hosts(self, mappings):
        """Sorted hosts with compute nodes but no host mapping."""
        def mapped_hosts(ctx):
            return {row.host for row in ctx.session.execute(
                sa.select(api_tables.host_mappings.c.host))}
        mapped = self._api().reader(mapped_hosts)(_ctxt())
        hosts = set()
        for mapping in mappings:
            if mapping.is_cell0:
                continue
            database = self._registry().get(mapping)
            hosts.update(node['host'] for node in
                         compute_records.list_compute_nodes(_ctxt(),
                                                            database))
        return sorted(hosts - mapped), mapped

    def _check_computes_mapped(self):
        try:
            unmapped, mapped = self._unmapped_hosts(self._mappings())
        except (db_exc.DBError, sa.exc.SQLAlchemyError,
                exception.DBNotConfigured) as exc:
            return Result(Code.FAILURE, 'The compute nodes could not be '
                          'read: %s' % _error(exc))
        if unmapped and not mapped:
            return Result(Code.FAILURE, 'No host mappings found but there '
                          'are compute nodes. Run command "berth-manage '
                          'cell_v2 discover_hosts" and then retry.')
        if unmapped:
            return Result(Code.WARNING, 'Compute hosts without a host '
                          'mapping get no instances: %s. Run command '
                          '"berth-manage cell_v2 discover_hosts".'
                          % ', '.join(unmapped))
        return Result(Code.SUCCESS)

    # --- placement ---------------------------------------------------------

    def _client(self):
        if self._placement is None:
            self._placement = placement_client.PlacementClient(self.conf)
        return self._placement

    def _check_placement(self):
        needed = needed_placement_version()
        try:
            resp = self._client().request(
                'GET', '/', microversions.PROVIDER_LISTING,
                timeout=PLACEMENT_TIMEOUT)
        except placement_client.PlacementUnavailable as exc:
            return Result(Code.FAILURE, 'Placement API is not reachable: %s'
                          % exc)
        except Exception as exc:  # noqa: B902 - auth/config errors
            return Result(Code.FAILURE, 'Placement API could not be '
                          'called: %s' % _error(exc))
        if resp.status == 401:
            return Result(Code.FAILURE, 'Placement service credentials do '
                          'not work.')
        versions = (resp.body or {}).get('versions') if resp.ok else None
        if not versions:
            return Result(Code.FAILURE, 'Placement API answered %s without '
                          'a version document.' % resp.status)
        served = max((v['max_version'] for v in versions
                      if v.get('max_version')), key=_version, default=None)
        if served is None:
            return Result(Code.FAILURE, 'Placement API answered without a '
                          'max_version.')
        if _version(served) < _version(needed):
            return Result(Code.FAILURE, 'Placement API version %s needed, '
                          'you have %s.' % (needed, served))
        return Result(Code.SUCCESS)

    # --- policy ------------------------------------------------------------

    def _policy_path(self):
        """The policy file's path, or None when there is none."""
        name = self.conf.oslo_policy.policy_file
        if os.path.isabs(name):
            return name if os.path.exists(name) else None
        try:
            return self.conf.find_file(name)
        except cfg.NotInitializedError:
            # NOTE: no config files parsed: nowhere to look relative to.
            return None

    def _check_policy(self):
        path = self._policy_path()
        if not path:
            return Result(Code.SUCCESS, 'No policy file: the built-in '
                          'defaults apply.')
        # NOTE: a private ConfigOpts, so that the check reads exactly this
        # file (no policy_dirs) whatever the caller's conf holds.
        # (Not policy_opts.set_defaults: it changes the shared options'
        # defaults for every ConfigOpts in the process.)
        policy_conf = cfg.ConfigOpts()
        policy_conf([], default_config_files=[], default_config_dirs=[])
        for group, opts in policy_opts.list_opts():
            policy_conf.register_opts(opts, group=group)
        policy_conf.set_override('policy_file', path, group='oslo_policy')
        policy_conf.set_override('policy_dirs', [], group='oslo_policy')
        enforcer = oslo_policy.Enforcer(policy_conf, policy_file=path)
        enforcer.register_defaults(api_policies.list_rules())
        try:
            enforcer.load_rules(force_reload=True)
        except Exception as exc:  # noqa: B902 - any parse error
            return Result(Code.FAILURE, 'The policy file %s cannot be '
                          'read: %s' % (path, _error(exc)))
        if not enforcer.check_rules(raise_on_violation=False):
            return Result(Code.FAILURE, 'The policy file %s has rules that '
                          'refer to undefined or cyclic rules; see the '
                          'log.' % path)
        return Result(Code.SUCCESS)

    def _check_policy_json(self):
        path = self._policy_path()
        if path and fileutils.is_json(path):
            return Result(Code.FAILURE, 'The policy file %s is JSON, which '
                          'is deprecated: convert it to YAML with '
                          'oslopolicy-convert-json-to-yaml.' % path)
        return Result(Code.SUCCESS)

    _upgrade_checks = (
        ('Database schemas', _check_schemas),
        ('Cells v2', _check_cells),
        ('Compute hosts mapped', _check_computes_mapped),
        ('Placement API', _check_placement),
        ('Policy File', _check_policy),
        ('Policy File JSON to YAML Migration', _check_policy_json),
    )


def main(argv=None):
    """Console-script entry point; returns the process exit code."""
    argv = sys.argv[1:] if argv is None else argv
    if 'command' not in CONF:
        upgradecheck.register_cli_options(CONF, Checks())
    try:
        config.parse_args(argv)
    except cfg.ConfigFilesNotFoundError as exc:
        print('Failed to read configuration file(s): %s'
              % ', '.join(exc.config_files), file=sys.stderr)
        return 255
    CONF.set_default('use_stderr', True)
    config.setup_logging('berth-status')
    # NOTE: oslo.upgradecheck reads --json from its module-level CONF.
    upgradecheck.CONF = CONF
    return upgradecheck.run(CONF)


if __name__ == '__main__':
    sys.exit(main())
