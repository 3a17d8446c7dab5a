# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A declarative URL map: path templates to per-method handler functions.

Both APIs describe themselves as one table, ``{template: {method:
handler}}``, as upstream placement does. This module turns such a table
into a lookup; the errors are the caller's, so that each API answers a
path matching no template (404) and a known path with another method (405,
naming the allowed ones) in its own error format.

Templates are matched exactly first, then in declaration order; a
``{name}`` segment matches one path segment and is handed back as a
``urlvars`` entry.
"""

import re


def _compile(template):
    pattern = re.sub(r'\{(\w+)\}', r'(?P<\1>[^/]+)', template)
    return re.compile('^%s$' % pattern)


class Router(object):
    """Match paths against a route table and find the handler.

    The two class attributes are where the APIs differ: placement, as
    upstream, treats ``/resource_providers/`` as an unknown path and HEAD
    as an unknown method; Nova ignores a trailing slash and answers HEAD
    with the GET handler.
    """

    #: Ignore a trailing slash (``/servers/`` is ``/servers``).
    strip_trailing_slash = False
    #: Serve HEAD with the GET handler when no HEAD handler is declared.
    head_as_get = False

    def __init__(self, declarations, not_found, method_not_allowed):
        """
        :param declarations: {template: {method: handler(req)}}.
        :param not_found: callable returning the exception to raise for an
            unknown path.
        :param method_not_allowed: callable(allowed methods string)
            returning the exception for a known path and another method.
        """
        self._exact = {}
        self._patterns = []
        self._not_found = not_found
        self._method_not_allowed = method_not_allowed
        for template, methods in declarations.items():
            if '{' in template:
                self._patterns.append((_compile(template), methods))
            else:
                self._exact[template] = methods

    def match(self, path):
        """(methods, urlvars) for ``path``, or (None, None)."""
        if self.strip_trailing_slash:
            path = path.rstrip('/')
        path = path or '/'
        methods = self._exact.get(path)
        if methods is not None:
            return methods, {}
        for regex, methods in self._patterns:
            found = regex.match(path)
            if found:
                return methods, found.groupdict()
        return None, None

    def handler_for(self, method, path):
        """(handler, urlvars) for a request.

        :param method: the HTTP method.
        :param path: the path, relative to where the table is mounted.
        :raises: what ``not_found`` / ``method_not_allowed`` return.
        """
        methods, urlvars = self.match(path)
        if methods is None:
            raise self._not_found()
        handler = methods.get(method)
        if handler is None and method == 'HEAD' and self.head_as_get:
            handler = methods.get('GET')
        if handler is None:
            raise self._method_not_allowed(', '.join(sorted(methods)))
        return handler, urlvars
