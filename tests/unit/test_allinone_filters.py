# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The all-in-one's filters: the defaults, the demo's, and the two hint
filters devstack enables for Nova.
"""

from oslo_config import cfg
from oslo_log import log as oslo_log

from common.conf import opts
from services.allinone import state as state_mod


def _conf(tmp_path, *args):
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    oslo_log.register_options(conf)
    conf(list(args))
    state_mod.apply_defaults(conf, state_mod.StateDir(str(tmp_path)), 2)
    return conf


def test_same_and_different_host_filters_are_on(tmp_path):
    enabled = _conf(tmp_path).filter_scheduler.enabled_filters
    defaults = cfg.ConfigOpts()
    opts.register_all(defaults)
    defaults([])
    assert set(defaults.filter_scheduler.enabled_filters) <= set(enabled)
    assert {'SameHostFilter', 'DifferentHostFilter'} <= set(enabled)


def test_a_config_file_still_wins(tmp_path):
    conf_file = tmp_path / 'berth.conf'
    conf_file.write_text('[filter_scheduler]\n'
                         'enabled_filters = ComputeFilter\n')
    conf = _conf(tmp_path, '--config-file', str(conf_file))
    assert conf.filter_scheduler.enabled_filters == ['ComputeFilter']


def test_the_written_config_carries_the_schedulers_filters(tmp_path):
    """berth-manage's dry runs read them from <state>/berth.conf."""
    conf = _conf(tmp_path)
    state = state_mod.StateDir(str(tmp_path))
    path = state_mod.write_config(conf, state)
    again = cfg.ConfigOpts()
    opts.register_all(again)
    again(['--config-file', path])
    assert again.filter_scheduler.enabled_filters == \
        conf.filter_scheduler.enabled_filters
    assert again.filter_scheduler.weight_classes == ['all']
