# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Guard tests for packaging: what setup.cfg declares is what installs.

Berth's import names (``common``, ``services``) are generic, so these tests
also check that they come from the berth distribution and nothing else.
"""

import configparser
import importlib
import importlib.metadata
import importlib.resources
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _declared_entry_points():
    """``[(group, name, 'module:attr')]`` from setup.cfg's entry points."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(os.path.join(ROOT, 'setup.cfg'))
    # NOTE: setuptools reads [options.entry_points]; pbr read [entry_points].
    section = ('options.entry_points'
               if parser.has_section('options.entry_points')
               else 'entry_points')
    result = []
    for group, text in parser.items(section):
        for line in text.splitlines():
            if '=' in line:
                name, target = (part.strip() for part in line.split('=', 1))
                result.append((group, name, target))
    return result


ENTRY_POINTS = _declared_entry_points()


def test_setup_cfg_declares_entry_points():
    """The parser above found the console scripts and plugin groups."""
    groups = {group for group, _name, _target in ENTRY_POINTS}
    assert {'console_scripts', 'oslo.config.opts'} <= groups


def test_client_extra_installs_the_cli_and_its_placement_plugin():
    """``pip install -e .[client]`` (README) brings what OS_CLOUD needs."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(os.path.join(ROOT, 'setup.cfg'))
    names = {line.split('>')[0].split('=')[0].strip() for line in parser.get(
        'options.extras_require', 'client').splitlines() if line.strip()}
    assert names == {'python-openstackclient', 'osc-placement'}
    with open(os.path.join(ROOT, 'README.md')) as f:
        readme = f.read()
    assert '.venv/bin/pip install -e .[client]' in readme


def test_common_conf_imports_from_installed_package(tmp_path):
    """``common.conf`` imports in a fresh interpreter away from the tree.

    NOTE: run from an empty directory so that the current directory on
    sys.path cannot stand in for the installed package.
    """
    code = ('import common.conf, services.placement, sys; '
            'print(common.conf.__file__); '
            'print(len(common.conf.CONF.list_all_sections()))')
    result = subprocess.run([sys.executable, '-I', '-c', code],
                            cwd=str(tmp_path), capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    path = result.stdout.splitlines()[0]
    assert path.endswith(os.path.join('common', 'conf', '__init__.py'))


@pytest.mark.parametrize('top_level', ['common', 'services'])
def test_top_level_names_belong_to_berth(top_level):
    """No other installed distribution ships ``common`` or ``services``."""
    owners = importlib.metadata.packages_distributions().get(top_level, [])
    assert set(owners) == {'berth'}, owners


@pytest.mark.parametrize('group, name, target', ENTRY_POINTS,
                         ids=['%s:%s' % (g, n) for g, n, _t in ENTRY_POINTS])
def test_entry_point_resolves(group, name, target):
    """Every entry point in setup.cfg imports and is callable."""
    module_name, _sep, attr = target.partition(':')
    obj = importlib.import_module(module_name.strip())
    for part in attr.strip().split('.'):
        obj = getattr(obj, part)
    assert callable(obj)


@pytest.mark.parametrize('group, name, target', ENTRY_POINTS,
                         ids=['%s:%s' % (g, n) for g, n, _t in ENTRY_POINTS])
def test_entry_point_is_installed(group, name, target):
    """The installed metadata carries setup.cfg's entry points.

    A failure here in a dev venv means it is stale: ``pip install -e .``.
    """
    installed = {(ep.group, ep.name): ep.value.replace(' ', '')
                 for ep in importlib.metadata.distribution(
                     'berth').entry_points}
    assert installed.get((group, name)) == target.replace(' ', '')


def test_migrations_are_package_data():
    """The alembic environment ships with the package."""
    migrations = importlib.resources.files(
        'services.placement.db').joinpath('migrations')
    assert migrations.joinpath('env.py').is_file()
    assert migrations.joinpath('script.py.mako').is_file()
