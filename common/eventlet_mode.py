# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The opt-in eventlet mode: monkey-patch the process when asked to.

Berth runs on native threads (doc/architecture.md, "Decisions").
Deployments that still want green threads set ``BERTH_EVENTLET=1`` in the
environment of a service and install the ``berth[eventlet]`` extra.
Everything eventlet needs happens here, once, when this module is
imported:

- ``eventlet.monkey_patch()`` swaps threads, locks, sockets, ``select``
  and ``time.sleep`` for their green versions, so that the rest of Berth
  runs unchanged;
- oslo.messaging then sees a patched ``thread`` module and picks its
  ``eventlet`` executor by itself (``common.rpc.get_server`` passes no
  executor on purpose).

Patching must come before anything else imports ``threading`` or
``socket``, so every console script's module imports this one first::

    from common import eventlet_mode  # noqa: F401 (must be first)

and that import does nothing at all without ``BERTH_EVENTLET``. Library
code never imports eventlet; it only may ask :func:`is_active`.
"""

import os
import warnings

ENV_VAR = 'BERTH_EVENTLET'
_TRUE = ('1', 'true', 'yes', 'on')

# NOTE: set once by _patch_if_requested() at import; read by is_active().
_ACTIVE = False


def requested(environ=None):
    """True when ``BERTH_EVENTLET`` asks for the eventlet mode.

    :param environ: the environment mapping; ``os.environ`` by default.
    """
    value = (environ if environ is not None else os.environ).get(ENV_VAR)
    return (value or '').strip().lower() in _TRUE


def is_active():
    """True when this process has been monkey-patched by this module."""
    return _ACTIVE


def _patch_if_requested():
    """Monkey-patch everything when requested; a no-op otherwise.

    :raises ImportError: when the mode is requested but eventlet is not
        installed, naming the extra that provides it.
    """
    global _ACTIVE
    if _ACTIVE:
        return
    if not requested():
        # NOTE: oslo.messaging imports oslo.service, whose default backend
        # imports eventlet (never patching anything); eventlet then warns
        # that it is deprecated on every start of every native-threads
        # service. Only the opt-in mode is eventlet's business.
        warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
        return
    try:
        import eventlet
    except ImportError as exc:
        raise ImportError(
            '%s=%s asks for the eventlet mode, but eventlet is not '
            'installed: pip install "berth[eventlet]" (%s)'
            % (ENV_VAR, os.environ.get(ENV_VAR), exc)) from exc
    # NOTE: everything, as nova's monkey_patch does: a half-patched process
    # (green sockets, native locks) deadlocks in ways that are hard to see.
    eventlet.monkey_patch()
    _ACTIVE = True


_patch_if_requested()
