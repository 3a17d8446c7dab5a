# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Discovery of the option-group modules in ``common.conf``.

Each module in this package that defines ``register_opts(conf)`` and
``list_opts()`` is an option group. They are found by name so that adding
a group is adding a module, and ``oslo-config-generator`` sees them all
through :func:`list_opts`.
"""

import importlib
import pkgutil

import common.conf as _pkg

_SKIP = ('opts',)


def _group_modules():
    """Import and yield every option-group module, in name order."""
    for info in sorted(pkgutil.iter_modules(_pkg.__path__),
                       key=lambda m: m.name):
        if info.name in _SKIP or info.name.startswith('_'):
            continue
        yield importlib.import_module('common.conf.' + info.name)


def register_all(conf):
    """Register every Berth option group on ``conf``."""
    for module in _group_modules():
        module.register_opts(conf)


def list_opts():
    """Return ``[(group, [opts])]`` for oslo-config-generator."""
    result = []
    for module in _group_modules():
        result.extend(module.list_opts())
    return result
