# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Guard tests for the configuration: every option group is listed.

``common/conf/<group>.py`` modules are found by name; these tests make sure
each follows the contract (``register_opts``/``list_opts``) and that the
sample config generator sees every option Berth registers.
"""

import os
import pkgutil

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_config import generator

import common.conf
from common.conf import opts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
GENERATOR_CONF = os.path.join(ROOT, 'etc', 'berth', 'config-generator.conf')

# NOTE: groups whose options a library's own generator namespace lists
# (named in etc/berth/config-generator.conf), so Berth's list_opts skips
# them to avoid listing them twice.
LISTED_BY_LIBRARY = {'oslo_policy': 'oslo.policy',
                     'oslo_messaging_notifications': 'oslo.messaging'}
# NOTE: keystoneauth registers an auth plugin's own options when the plugin
# named by auth_type is loaded (the all-in-one loads admin_token in-process
# and sets defaults on keystoneauth's shared option objects). The sample
# lists the password plugin's; the others are keystoneauth's to document.
AUTH_PLUGIN_OPTIONS = {
    opt.dest for plugin in ('admin_token', 'password', 'token')
    for opt in ks_loading.get_auth_plugin_conf_options(plugin)}
KEYSTONEAUTH_GROUPS = ('placement', 'glance', 'compute_api')


def _group_module_names():
    return sorted(info.name for info in pkgutil.iter_modules(
        common.conf.__path__)
        if info.name != 'opts' and not info.name.startswith('_'))


def _group_name(group):
    return group.name if isinstance(group, cfg.OptGroup) else group


def test_every_module_is_an_option_group():
    """Each module in common/conf has register_opts and list_opts."""
    modules = list(opts._group_modules())
    assert [m.__name__.rsplit('.', 1)[1] for m in modules] == (
        _group_module_names())
    for module in modules:
        assert callable(getattr(module, 'register_opts', None)), module
        assert callable(getattr(module, 'list_opts', None)), module


def test_list_opts_covers_every_registered_option():
    """Every option register_all puts on a ConfigOpts is in list_opts."""
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    listed = {}
    for group, group_opts in opts.list_opts():
        listed.setdefault(_group_name(group), set()).update(
            opt.dest for opt in group_opts)
    # NOTE: oslo.config registers a few options of its own on every
    # ConfigOpts (config_source, shell_completion); they are not Berth's.
    builtin = set(cfg.ConfigOpts().keys())
    registered = {'DEFAULT': set()}
    for key in set(conf.keys()) - builtin:
        if isinstance(conf[key], cfg.ConfigOpts.GroupAttr):
            registered[key] = set(conf[key].keys())
        else:
            registered['DEFAULT'].add(key)
    assert 'placement_database' in registered
    for group_name, names in registered.items():
        if group_name in LISTED_BY_LIBRARY:
            continue
        missing = names - listed.get(group_name, set())
        if group_name in KEYSTONEAUTH_GROUPS:
            missing -= AUTH_PLUGIN_OPTIONS
        assert not missing, '[%s] not listed: %s' % (group_name, missing)


def test_generator_names_the_library_namespaces():
    """Groups left to a library are listed through its namespace."""
    with open(GENERATOR_CONF) as f:
        text = f.read()
    # NOTE: the file repeats ``namespace =``; read it line by line.
    namespaces = [line.split('=', 1)[1].strip() for line in text.splitlines()
                  if line.strip().startswith('namespace')]
    assert 'berth' in namespaces
    for namespace in LISTED_BY_LIBRARY.values():
        assert namespace in namespaces
    assert 'oslo.middleware.cors' not in namespaces, (
        '[cors] is listed by the berth namespace already')


def test_genconfig_writes_every_group_once(tmp_path):
    """oslo-config-generator runs and lists each section exactly once."""
    out = tmp_path / 'berth.conf.sample'
    generator.main(['--config-file', GENERATOR_CONF,
                    '--output-file', str(out)])
    sections = [line.strip() for line in out.read_text().splitlines()
                if line.startswith('[')]
    assert len(sections) == len(set(sections)), sections
    expected = {'[DEFAULT]', '[api]', '[cors]', '[oslo_policy]',
                '[placement_database]', '[keystone_authtoken]'}
    assert expected <= set(sections)


def test_database_pools_are_larger_than_oslo_db_default():
    """Berth's threaded services would otherwise reconnect per request."""
    from oslo_db import options as oslo_db_options
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    conf([])
    for group in ('database', 'api_database', 'placement_database'):
        assert conf[group].max_pool_size == 10, group
    # NOTE: oslo.db's own option object keeps oslo.db's default.
    assert [o.default for o in oslo_db_options.database_opts
            if o.dest == 'max_pool_size'] == [5]
