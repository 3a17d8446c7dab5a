# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Guard helper: an RPC client and its server speak the same version.

Each service's test calls ``assert_versions_in_sync(XAPI, XManager)``. The
client's versions are read where a reviewer reads them: the version
history in the class docstring (lines like ``* 1.3 - Add foo()``) and the
``version='X.Y'`` literals of its ``prepare()`` calls.
"""

import inspect
import re

from oslo_utils import versionutils

_HISTORY_RE = re.compile(r'^\s*[*-]?\s*(\d+\.\d+)\s+-', re.MULTILINE)
_PREPARE_RE = re.compile(r'''version\s*=\s*['"](\d+\.\d+)['"]''')


def _newest(versions):
    return max(versions, key=versionutils.convert_version_to_tuple)


def client_versions(rpcapi_cls):
    """(history versions, prepared versions) of an RPC API client class."""
    history = _HISTORY_RE.findall(inspect.getdoc(rpcapi_cls) or '')
    prepared = _PREPARE_RE.findall(inspect.getsource(rpcapi_cls))
    return history, prepared


def assert_versions_in_sync(rpcapi_cls, manager_cls):
    """Fail unless the client's newest version is the server's version.

    :param rpcapi_cls: the client class (``services/<svc>/rpcapi.py``).
    :param manager_cls: the server class with ``target.version``.
    :raises AssertionError: naming both versions when they differ, when the
        client has no version history or sends a version the server does
        not have, or when a release alias maps above the server version.
    """
    server = manager_cls.target.version
    history, prepared = client_versions(rpcapi_cls)
    name = rpcapi_cls.__name__
    assert history, ('%s has no version history in its docstring '
                     '(lines like "* 1.0 - Initial version")' % name)
    assert prepared, '%s never calls prepare(version=...)' % name
    newest = _newest(history)
    assert newest == server, (
        '%s documents version %s but %s.target is %s'
        % (name, newest, manager_cls.__name__, server))
    newest_sent = _newest(prepared)
    assert newest_sent == server, (
        '%s sends version %s at most but %s.target is %s'
        % (name, newest_sent, manager_cls.__name__, server))
    for version in set(history) | set(prepared):
        assert versionutils.is_compatible(version, server), (
            '%s uses version %s, which %s.target %s cannot serve'
            % (name, version, manager_cls.__name__, server))
    for alias, version in getattr(rpcapi_cls, 'VERSION_ALIASES',
                                  {}).items():
        assert versionutils.is_compatible(version, server), (
            '%s alias %s = %s is newer than %s.target %s'
            % (name, alias, version, manager_cls.__name__, server))
