# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. See the License
# for the specific language governing permissions and limitations.
"""Benchmarks that drive Berth (and upstream peers) over real sockets.

Run them with ``tox -e bench -- <name>`` or ``python -m tests.bench <name>``;
``tests/bench/README.md`` lists the benchmarks and what they measure.
"""
