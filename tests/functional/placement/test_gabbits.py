# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The project's placement gabbi files, run on MariaDB and on PostgreSQL.

The YAML files in ``tests/unit/placement/gabbits`` run on SQLite in the
unit suite. Here the same files run once per real backend, each in its own
pytest process pointed at a fresh database through
``BERTH_TEST_PLACEMENT_DB`` (the gabbi fixtures bind one database per
process, so one process per backend keeps them honest).
"""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
GABBI_MODULE = os.path.join('tests', 'unit', 'placement', 'test_api.py')
TIMEOUT = 25 * 60


def test_gabbi_files(real_backend, make_database):
    """Every gabbi YAML file passes on this backend."""
    env = dict(os.environ, BERTH_TEST_PLACEMENT_DB=make_database(
        real_backend))
    # NOTE: -p no:xdist: one ordered process; -rfE names each failure.
    result = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-rfE', '-p', 'no:xdist',
         '-p', 'no:cacheprovider', GABBI_MODULE],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    output = result.stdout + result.stderr
    summary = output.strip().splitlines()[-1] if output.strip() else ''
    print('%s gabbi: %s' % (real_backend, summary))
    assert result.returncode == 0, '%s: gabbi files failed (%s):\n%s' % (
        real_backend, summary, output[-20000:])
    assert ' passed' in summary
