# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The compute API WSGI application for uwsgi, gunicorn or mod_wsgi.

The config file is named by the ``BERTH_CONFIG_FILE`` environment variable
(default ``/etc/berth/berth.conf``). The application is built on first
use, so importing this module touches neither database nor message queue
(:class:`common.wsgi.app_loader.LazyApplication`).
"""

from common.wsgi import app_loader


def _build(conf):
    # NOTE: imported here, on the first request, for the reason above.
    from services.api import deploy
    return deploy.loadapp(conf)


application = app_loader.LazyApplication('berth-api', _build)
