# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The application factory behind each API's ``wsgi.py`` module.

uwsgi, gunicorn and mod_wsgi import a module and call its ``application``;
they pass no command line. The config file is therefore named by the
``BERTH_CONFIG_FILE`` environment variable (default
``/etc/berth/berth.conf``), and the application is built on the first
request, so that importing the module touches neither database nor
message queue.
"""

import os
import threading

from common import gc_tuning

CONFIG_ENV = 'BERTH_CONFIG_FILE'
DEFAULT_CONFIG_FILE = '/etc/berth/berth.conf'


def load(name, build, config_file=None):
    """Parse the config, set up logging and build an application.

    :param name: the service name logs are set up for (``berth-api``).
    :param build: callable(conf) returning the WSGI application.
    :param config_file: the config file; default: ``$BERTH_CONFIG_FILE``
        or ``/etc/berth/berth.conf``. A missing file means defaults only.
    """
    from common import config

    config_file = config_file or os.environ.get(CONFIG_ENV,
                                                DEFAULT_CONFIG_FILE)
    args = ['--config-file', config_file] if os.path.exists(
        config_file) else []
    conf = config.parse_args(args)
    config.setup_logging(name)
    return build(conf)


class LazyApplication(object):
    """A WSGI application that :func:`load` builds on its first request."""

    def __init__(self, name, build):
        """
        :param name: the service name, as for :func:`load`.
        :param build: callable(conf) returning the real application.
        """
        self.name = name
        self.build = build
        #: The built application; None until the first request.
        self.app = None
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        if self.app is None:
            with self._lock:
                if self.app is None:
                    app = load(self.name, self.build)
                    gc_tuning.settle()
                    self.app = app
        return self.app(environ, start_response)
