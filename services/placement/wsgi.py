# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The placement WSGI application for uwsgi, gunicorn or mod_wsgi.

The config file is named by the ``BERTH_CONFIG_FILE`` environment variable
(default ``/etc/berth/berth.conf``). The application is built on first
use, so importing this module never touches the database.
"""

import os
import threading

_APP = None
_LOCK = threading.Lock()


def init_application(config_file=None):
    """Parse the config and build the placement application."""
    from common import config
    from services.placement import server

    config_file = config_file or os.environ.get(
        'BERTH_CONFIG_FILE', '/etc/berth/berth.conf')
    args = ['--config-file', config_file] if os.path.exists(
        config_file) else []
    conf = config.parse_args(args)
    config.setup_logging('berth-placement-api')
    return server.build_application(conf)


def application(environ, start_response):
    """WSGI entry point."""
    global _APP
    if _APP is None:
        with _LOCK:
            if _APP is None:
                _APP = init_application()
    return _APP(environ, start_response)
