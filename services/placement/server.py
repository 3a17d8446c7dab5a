# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-placement-api``: serve placement with a threaded HTTP server.

    berth-placement-api --config-file /etc/berth/berth.conf \\
        [--host H] [--port P]

The server and its signal handling are :mod:`common.wsgi.server`'s;
placement brings its application (database first) and its
``[placement_api]`` options.
"""

# NOTE: first, before anything imports threading (BERTH_EVENTLET mode).
from common import eventlet_mode  # noqa: F401

import sys

from common.wsgi import server
from services.placement.db import api as db_api
from services.placement import deploy
from services.placement.objects import catalog

NAME = 'berth-placement-api'


def build_application(conf):
    """Configure the database and return the WSGI app.

    With ``[placement_database] sync_on_startup`` the schema is upgraded
    first; otherwise the standard catalogues are only loaded.
    """
    db_api.configure(conf)
    if conf.placement_database.sync_on_startup:
        db_api.sync(conf)
    else:
        catalog.sync_standard_catalogues()
    return deploy.loadapp(conf)


def main(argv=None):
    """Console-script entry point."""
    return server.main(NAME, 'placement_api', build_application, argv)


if __name__ == '__main__':
    sys.exit(main())
