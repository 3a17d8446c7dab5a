# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The WSGI plumbing every Berth HTTP API shares.

The compute API (``services/api``) and placement (``services/placement``)
stack the same middleware, route the same way, negotiate microversions the
same way and run under the same threaded server. That machinery lives here
once; each API keeps what makes it that API: its routes, its microversion
list and headers, its error documents and its policy rules.
"""
