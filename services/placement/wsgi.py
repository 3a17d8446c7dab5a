# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The placement WSGI application for uwsgi, gunicorn or mod_wsgi.

The config file is named by the ``BERTH_CONFIG_FILE`` environment variable
(default ``/etc/berth/berth.conf``). The application is built on first
use, so importing this module never touches the database
(:class:`common.wsgi.app_loader.LazyApplication`).
"""

from common.wsgi import app_loader


def _build(conf):
    # NOTE: imported here, on the first request, for the reason above.
    from services.placement import server
    return server.build_application(conf)


application = app_loader.LazyApplication('berth-placement-api', _build)
