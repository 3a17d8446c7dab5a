# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[metrics]`` group: MetricsFilter and MetricsWeigher."""

from oslo_config import cfg

metrics_group = cfg.OptGroup(
    'metrics', title='Metrics options',
    help='Host metrics reported by compute agents, for scheduling.')

metrics_opts = [
    cfg.FloatOpt('weight_multiplier', default=1.0, help="""
Multiplier of the metrics weigher.
"""),
    cfg.ListOpt('weight_setting', default=[], help="""
The metrics to weigh and their ratios, as "name=ratio" items, e.g.
"cpu.user.percent=-1.0,cpu.idle.percent=1.0".
"""),
    cfg.BoolOpt('required', default=True, help="""
Whether a host lacking a metric of weight_setting fails MetricsFilter.
When False, such a host gets weight_of_unavailable instead.
"""),
    cfg.FloatOpt('weight_of_unavailable', default=-10000.0, help="""
The weight of a host missing a metric, when required is False.
"""),
]


def register_opts(conf):
    """Register the [metrics] options."""
    conf.register_group(metrics_group)
    conf.register_opts(metrics_opts, group=metrics_group)


def list_opts():
    """Options for the sample config."""
    return [(metrics_group, metrics_opts)]
