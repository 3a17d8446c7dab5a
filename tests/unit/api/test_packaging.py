# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The compute API's entry points: console script, policies, routes."""

from importlib import metadata

from oslo_policy import policy

from services.api import handler
from services.api import policies
from services.api import wsgi


def test_console_script_and_policy_entry_point():
    scripts = {e.name: e.value for e in metadata.entry_points(
        group='console_scripts')}
    assert scripts.get('berth-api') == 'services.api.server:main'
    found = {e.name: e for e in metadata.entry_points(
        group='oslo.policy.policies')}
    assert found['berth.compute'].load() is policies.list_rules


def test_rules_are_unique_and_documented():
    rules = policies.list_rules()
    names = [r.name for r in rules]
    assert len(names) == len(set(names))
    documented = [r for r in rules
                  if isinstance(r, policy.DocumentedRuleDefault)]
    assert all(r.operations for r in documented)


def test_every_route_handler_is_documented():
    for declarations in (handler.ROUTE_DECLARATIONS,
                         handler.IMAGE_ROUTE_DECLARATIONS,
                         handler.IDENTITY_ROUTE_DECLARATIONS):
        for methods in declarations.values():
            for function in methods.values():
                assert function.__doc__, function


def test_project_id_in_paths():
    assert handler.compute_path('/v2.1/servers/x') == '/servers/x'
    assert handler.compute_path('/v2.1/proj/servers/x') == '/servers/x'
    assert handler.compute_path('/v2.1') == '/'
    assert handler.compute_path('/v2/servers') is None


def test_wsgi_module_builds_lazily():
    assert callable(wsgi.application)
    assert wsgi.application.app is None
