# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Gabbi fixtures for placement API tests.

The placement app runs in-process (wsgi-intercept) on a database chosen by
``BERTH_TEST_PLACEMENT_DB`` (an SQLAlchemy URL; default a fresh SQLite file
per test process). Each YAML file starts from an empty database: the
fixture deletes every row except the standard catalogues.

Fixtures named in YAML files:

* ``APIFixture``: an empty placement, legacy policy defaults, and random
  ids in environment variables (RP_UUID, RP_NAME, PROJECT_ID, USER_ID, ...).
* ``SecureRBACPolicyFixture``: the same with the new policy defaults.
* ``OpenPolicyFixture``: the same with a policy file allowing everything
  but ``admin_api``.
"""

import os
import tempfile
import uuid

from gabbi import fixture
from oslo_config import cfg
import sqlalchemy as sa

from common import config
from services.placement.db import api as db_api
from services.placement.db import tables
from services.placement import deploy
from services.placement.objects import catalog
from services.placement.objects import provider_cache
from services.placement import policies

_STATE = {}


def _database_url():
    url = os.environ.get('BERTH_TEST_PLACEMENT_DB')
    if url:
        return url
    path = os.path.join(tempfile.mkdtemp(prefix='berth-placement-'),
                        'placement.sqlite')
    return 'sqlite:///%s' % path


def _conf():
    """Parse an empty command line once and point placement at the test DB."""
    if 'conf' not in _STATE:
        conf = config.parse_args([])
        conf.set_override('auth_strategy', 'noauth2', group='api')
        conf.set_override('connection', _database_url(),
                          group='placement_database')
        db_api.sync(conf)
        _STATE['conf'] = conf
    return _STATE['conf']


def setup_app():
    """The intercepted placement application (built once per process)."""
    if 'app' not in _STATE:
        _STATE['app'] = deploy.loadapp(_conf())
    return _STATE['app']


def wipe_database():
    """Delete every row but the standard resource classes and traits."""
    engine = db_api.placement_db.engine()
    with engine.begin() as conn:
        for table in (tables.allocations, tables.inventories,
                      tables.consumers, tables.resource_provider_traits,
                      tables.resource_provider_aggregates,
                      tables.placement_aggregates, tables.projects,
                      tables.users, tables.consumer_types):
            conn.execute(table.delete())
        # Children before parents: clear the tree links first.
        conn.execute(tables.resource_providers.update().values(
            root_provider_id=None, parent_provider_id=None))
        conn.execute(tables.resource_providers.delete())
        conn.execute(tables.resource_classes.delete().where(
            tables.resource_classes.c.id >= catalog.CUSTOM_RC_MIN_ID))
        conn.execute(tables.traits.delete().where(
            tables.traits.c.name.like('CUSTOM\\_%', escape='\\')))
    catalog.RESOURCE_CLASSES.clear()
    catalog.TRAITS.clear()
    provider_cache.CACHE.clear()


_ENV_UUIDS = ('RP_UUID', 'RP_NAME', 'RP_UUID1', 'RP_NAME1', 'RP_UUID2',
              'RP_NAME2', 'PROJECT_ID', 'ADMIN_PROJECT_ID',
              'SERVICE_PROJECT_ID', 'USER_ID', 'PROJECT_ID_ALT',
              'USER_ID_ALT', 'INSTANCE_UUID', 'MIGRATION_UUID',
              'CONSUMER_UUID', 'PARENT_PROVIDER_UUID',
              'ALT_PARENT_PROVIDER_UUID', 'ALT_USER_ID')


class APIFixture(fixture.GabbiFixture):
    """An empty placement with legacy policy defaults."""

    enforce_new_defaults = False
    policy_rules = None

    def start_fixture(self):
        conf = _conf()
        setup_app()
        wipe_database()
        conf.set_override('enforce_new_defaults', self.enforce_new_defaults,
                          group='oslo_policy')
        self._policy_dir = None
        if self.policy_rules is not None:
            self._policy_dir = tempfile.mkdtemp(prefix='berth-policy-')
            path = os.path.join(self._policy_dir, 'policy.yaml')
            with open(path, 'w') as f:
                for name, rule in self.policy_rules().items():
                    f.write('"%s": "%s"\n' % (name, rule))
            conf.set_override('policy_file', path, group='oslo_policy')
        policies.reset()
        for name in _ENV_UUIDS:
            os.environ[name] = str(uuid.uuid4())
        os.environ['CUSTOM_RES_CLASS'] = 'CUSTOM_IRON_NFV'
        self.make_entities()

    def make_entities(self):
        """Subclasses seed data here."""

    def stop_fixture(self):
        conf = _conf()
        conf.clear_override('enforce_new_defaults', group='oslo_policy')
        conf.clear_override('policy_file', group='oslo_policy')
        policies.reset()


class SecureRBACPolicyFixture(APIFixture):
    """New, project-scoped policy defaults."""

    enforce_new_defaults = True


class OpenPolicyFixture(APIFixture):
    """Every rule but admin_api open to anybody."""

    @staticmethod
    def policy_rules():
        return {rule.name: '@' for rule in policies.list_rules()
                if rule.name != 'admin_api'}


__all__ = ['APIFixture', 'SecureRBACPolicyFixture', 'OpenPolicyFixture',
           'setup_app', 'wipe_database', 'cfg', 'sa']
