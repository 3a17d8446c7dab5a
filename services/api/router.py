# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The compute API's URL matching: the shared router with Nova's rules.

:class:`common.wsgi.router.Router` does the matching for both APIs; Nova
differs from placement in two rules, set here: a trailing slash is
ignored (``/v2.1/servers/`` is ``/v2.1/servers``) and HEAD is answered by
the GET handler where no HEAD handler is declared.
"""

from common.wsgi import router


class Router(router.Router):
    """Match paths against ``declarations`` and call the handler."""

    strip_trailing_slash = True
    head_as_get = True
