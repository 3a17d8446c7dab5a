# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-api``: serve the compute API with a threaded HTTP server.

    berth-api --config-file /etc/berth/berth.conf [--host H] [--port P]

The server and its signal handling are :mod:`common.wsgi.server`'s; the
compute API brings its application and its ``[api]`` options.
"""

# NOTE: first, before anything imports threading (BERTH_EVENTLET mode).
from common import eventlet_mode  # noqa: F401

import sys

from common.wsgi import server
from services.api import deploy

NAME = 'berth-api'
# NOTE: tests and tools that serve the app on a port of their own.
make_server = server.make_server


def main(argv=None):
    """Console-script entry point."""
    return server.main(NAME, 'api', deploy.loadapp, argv)


if __name__ == '__main__':
    sys.exit(main())
