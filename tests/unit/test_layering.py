# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The layering rules, checked on every import statement of the tree.

1. ``common/`` never imports ``services/``: shared code must not depend
   on one service (a common module that needs a service's RPC client is
   handed it by that service, as common.cell_rpc and
   common.servicegroup_conductor are).
2. ``services/compute`` never imports ``common.db``: compute agents have
   no database credentials and reach records through the conductor.
3. A service imports another service only through its RPC client,
   ``services.<other>.rpcapi``; logic two services share lives in
   ``common/``.

Imports are read with :mod:`ast`, so the ones inside functions (late
imports) count as much as the module-level ones. The all-in-one launcher
composes every service in one process and is exempt from rule 3;
``berth-manage`` has a short allow-list below, each entry with its reason.
"""

import ast
import dataclasses
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

#: The services that run as their own processes and meet over RPC.
SERVICES = ('api', 'conductor', 'scheduler', 'compute', 'placement')

#: Service packages exempt from rule 3 (package -> reason).
EXEMPT_PACKAGES = {
    'allinone': 'berth-all-in-one starts every service in one process, so '
                'it imports their entry points (cmd, manager, deploy) and '
                'nothing else of them',
}

#: (importing module, imported module) -> reason: the only cross-service
#: imports of berth-manage that are not through an rpcapi.
ALLOWED = {
    ('services.manage.placement', 'services.placement.db.api'):
        '"placement db sync/version" migrate the placement service\'s own '
        'database schema, which only its db package knows',
    ('services.manage.placement_audit', 'services.conductor.allocation_audit'):
        '"placement audit" runs the conductor\'s periodic orphan audit on '
        'demand; both must find the same orphans',
    ('services.manage.placement_audit', 'services.conductor.allocations'):
        'deleting an orphan is the conductor\'s allocation write',
    ('services.manage.placement_heal', 'services.conductor.allocation_audit'):
        '"placement heal_allocations" writes what the conductor\'s audit '
        'expects an instance to hold',
    ('services.manage.placement_heal', 'services.conductor.allocations'):
        'healing writes allocations the way the conductor does',
    ('services.manage.status', 'services.api.policies'):
        '"berth-status upgrade check" validates the policy file against '
        'the compute API\'s rules',
    ('services.manage.status', 'services.placement.db.api'):
        '"berth-status upgrade check" compares the placement schema with '
        'its newest revision, which only its db package knows',
    ('services.manage.capacity_report',
     'services.scheduler.capacity.headroom'):
        '"capacity report" draws the headroom the scheduler\'s own '
        'headroom function computes, so that both agree',
    ('services.manage.capacity_report', 'services.scheduler.offline'):
        '"capacity report" builds the scheduling pipeline (its filters and '
        'weighers as configured) that the headroom function runs on',
    ('services.manage.scheduler', 'services.scheduler.offline'):
        '"scheduler explain" runs the scheduling pipeline in berth-manage '
        '(nothing claimed), so that it answers without a reachable '
        'scheduler (the all-in-one\'s in-process transport)',
    ('services.manage.capacity', 'services.scheduler.capacity.headroom'):
        '"capacity headroom" runs the scheduler\'s headroom on the '
        'offline pipeline; the API asks the scheduler for the same answer',
    ('services.manage.capacity', 'services.scheduler.capacity.what_if'):
        '"capacity what-if" plans the re-placement of lost hosts\' '
        'servers on the offline pipeline',
    ('services.manage.capacity', 'services.scheduler.offline'):
        'capacity answers need the scheduler\'s errors for an unreachable '
        'cloud (offline.Unreachable)',
    ('services.manage.scheduler', 'services.api.images'):
        '"scheduler explain --image" resolves an image the way a boot does '
        '(Glance or the built-in catalog)',
}

RULE_COMMON = 'common/ never imports services/'
RULE_COMPUTE_DB = 'services/compute never imports common.db'
RULE_RPCAPI = 'a service imports another service only through its rpcapi.py'


@dataclasses.dataclass(frozen=True)
class Violation(object):
    """One import that breaks a rule."""

    path: str
    line: int
    rule: str
    imported: str

    def __str__(self):
        return '%s:%d: imports %s: %s' % (self.path, self.line,
                                          self.imported, self.rule)


def module_name(relpath):
    """``services/api/boot.py`` -> ``services.api.boot``."""
    parts = relpath[:-len('.py')].split(os.sep)
    if parts[-1] == '__init__':
        parts.pop()
    return '.'.join(parts)


def imported_modules(tree, module, is_package):
    """(line, dotted name) of everything the module imports.

    ``from a.b import c`` yields ``a.b.c`` (c may be a module or a name
    in a.b; the rules only look at package prefixes, so either reads the
    same). Relative imports are resolved against ``module``.
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                package = module.split('.')
                if not is_package:
                    package = package[:-1]
                package = package[:len(package) - (node.level - 1)]
                base = '.'.join(package + ([base] if base else []))
            for alias in node.names:
                yield node.lineno, '%s.%s' % (base, alias.name)


def _check(module, imported):
    """The rule ``module`` importing ``imported`` breaks, or None."""
    mine = module.split('.')
    theirs = imported.split('.')
    if mine[0] == 'common' and theirs[0] == 'services':
        return RULE_COMMON
    if mine[0] != 'services' or len(mine) < 2:
        return None
    if mine[1] == 'compute' and theirs[:2] == ['common', 'db']:
        return RULE_COMPUTE_DB
    if theirs[0] != 'services' or len(theirs) < 2 or theirs[1] == mine[1]:
        return None
    if mine[1] in EXEMPT_PACKAGES or (module, imported) in ALLOWED:
        return None
    if theirs[1] in SERVICES and theirs[2:3] == ['rpcapi']:
        return None
    return RULE_RPCAPI


def check_tree(root, packages=('common', 'services')):
    """Every :class:`Violation` in the Python files under ``root``."""
    found = []
    for package in packages:
        for dirpath, dirnames, filenames in os.walk(
                os.path.join(root, package)):
            dirnames.sort()
            for filename in sorted(filenames):
                if not filename.endswith('.py'):
                    continue
                path = os.path.join(dirpath, filename)
                relpath = os.path.relpath(path, root)
                module = module_name(relpath)
                with open(path, encoding='utf-8') as source:
                    tree = ast.parse(source.read(), filename=relpath)
                for line, imported in imported_modules(
                        tree, module, filename == '__init__.py'):
                    rule = _check(module, imported)
                    if rule:
                        found.append(Violation(relpath, line, rule, imported))
    return found


def test_the_tree_keeps_the_layering_rules():
    violations = check_tree(ROOT)
    assert not violations, 'layering violations:\n' + '\n'.join(
        str(v) for v in violations)


def test_every_allowed_import_is_still_there():
    # NOTE: an allow-list entry whose import is gone would silently permit
    # the next one; each must name an import that exists.
    seen = set()
    for package in ('services',):
        for dirpath, _dirs, filenames in os.walk(os.path.join(ROOT, package)):
            for filename in filenames:
                if filename.endswith('.py'):
                    path = os.path.join(dirpath, filename)
                    module = module_name(os.path.relpath(path, ROOT))
                    with open(path, encoding='utf-8') as source:
                        tree = ast.parse(source.read())
                    seen.update(
                        (module, name) for _line, name in imported_modules(
                            tree, module, filename == '__init__.py'))
    assert set(ALLOWED) <= seen, set(ALLOWED) - seen


def _write(root, relpath, text):
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    for parent in path.relative_to(root).parents:
        if str(parent) != '.':
            (root / parent / '__init__.py').touch()
    path.write_text(text)


@pytest.mark.parametrize('relpath, text, line, rule, imported', [
    ('common/helper.py', 'import os\nfrom services.conductor import rpcapi\n',
     2, RULE_COMMON, 'services.conductor.rpcapi'),
    ('common/helper.py', 'def f():\n    import services.api.boot\n',
     2, RULE_COMMON, 'services.api.boot'),
    ('services/compute/agent.py', 'from common.db import cells\n',
     1, RULE_COMPUTE_DB, 'common.db.cells'),
    ('services/compute/agent.py', 'from common import db\n',
     1, RULE_COMPUTE_DB, 'common.db'),
    ('services/api/boot.py',
     'def late():\n    from services.conductor import cell_rpc\n',
     2, RULE_RPCAPI, 'services.conductor.cell_rpc'),
    ('services/api/boot.py', 'from services import conductor\n',
     1, RULE_RPCAPI, 'services.conductor'),
    ('services/conductor/sub/flow.py', 'from ...scheduler import pci\n',
     1, RULE_RPCAPI, 'services.scheduler.pci'),
    ('services/manage/cells.py', 'from services.conductor import x\n',
     1, RULE_RPCAPI, 'services.conductor.x'),
])
def test_a_forbidden_import_is_reported(tmp_path, relpath, text, line,
                                        rule, imported):
    _write(tmp_path, relpath, text)
    assert check_tree(str(tmp_path)) == [
        Violation(relpath, line, rule, imported)]
    assert str(check_tree(str(tmp_path))[0]) == '%s:%d: imports %s: %s' % (
        relpath, line, imported, rule)


@pytest.mark.parametrize('relpath, text', [
    ('services/api/boot.py', 'from services.conductor import rpcapi\n'),
    ('services/api/boot.py', 'import services.scheduler.rpcapi\n'),
    ('services/compute/cmd.py',
     'def f():\n    from services.conductor import rpcapi as c\n'),
    ('services/conductor/flow.py', 'from services.conductor import cell0\n'),
    ('services/conductor/flow.py', 'from . import cell0\n'),
    ('services/compute/agent.py', 'from common import servicegroup\n'),
    ('services/allinone/launcher.py', 'from services.api import deploy\n'),
    ('common/db/cells.py', 'from common import exception\n'),
])
def test_allowed_imports_are_not_reported(tmp_path, relpath, text):
    _write(tmp_path, relpath, text)
    assert check_tree(str(tmp_path)) == []
