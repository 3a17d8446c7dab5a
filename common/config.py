# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Process start-up: parse the command line and config files, set up logs."""

import logging
import sys

from oslo_log import log as oslo_log

from common.conf import CONF

LOG = logging.getLogger(__name__)

_LOGGING_SET_UP = False


def parse_args(argv=None, default_config_files=None, cli_opts=()):
    """Parse ``argv`` (without the program name) into ``CONF``.

    :param cli_opts: extra command-line options to register first.
    """
    global _LOGGING_SET_UP
    if not _LOGGING_SET_UP:
        oslo_log.register_options(CONF)
        _LOGGING_SET_UP = True
    for opt in cli_opts:
        if opt.dest not in CONF:
            CONF.register_cli_opt(opt)
    CONF(argv if argv is not None else sys.argv[1:], project='berth',
         default_config_files=default_config_files)
    return CONF


def setup_logging(name):
    """Configure oslo.log for the service ``name``."""
    oslo_log.setup(CONF, name)
