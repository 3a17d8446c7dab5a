# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Where the scheduler's host states come from.

Each module holds one :class:`services.scheduler.host_manager.HostSource`:

* :mod:`.database`: the api database and every cell database (services);
* :mod:`.memory`: HostState objects handed over directly (unit tests,
  benchmarks).
"""


def chunks(items, size=1000):
    """Split ``items`` into lists of at most ``size``.

    NOTE: IN lists are kept to 1000 values; larger ones hit parameter
    limits (SQLite) or slow plans (MySQL) and gain nothing.
    """
    items = list(items)
    for start in range(0, len(items), size):
        yield items[start:start + size]
