# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The stock ``openstack`` CLI as the functional tests drive it."""

import json
import os
import subprocess

import pytest

from tests.functional import placement_server

CLI_TIMEOUT = 120
OPENSTACK = (os.environ.get('BERTH_OPENSTACK_CLI') or
             placement_server.bin_path('openstack'))
skip_without_cli = pytest.mark.skipif(
    OPENSTACK is None,
    reason='the openstack CLI is not installed (pip install '
           'python-openstackclient osc-placement), or set '
           'BERTH_OPENSTACK_CLI')


class Client(object):
    """Runs ``openstack`` with the test's environment and nobody's OS_*.

    :param os_vars: the ``OS_*`` variables this client authenticates with.
    """

    def __init__(self, **os_vars):
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith('OS_')}
        self.env.update(os_vars)

    def run(self, *args, expect_ok=True):
        """``openstack args``; fails the test on an error unless told."""
        proc = subprocess.run([OPENSTACK] + list(args), env=self.env,
                              capture_output=True, text=True,
                              timeout=CLI_TIMEOUT)
        if expect_ok and proc.returncode != 0:
            pytest.fail('openstack %s failed (%d):\n%s\n%s' % (
                ' '.join(args), proc.returncode, proc.stdout, proc.stderr))
        return proc

    def json(self, *args):
        """``openstack args -f json``, decoded."""
        return json.loads(self.run(*(args + ('-f', 'json'))).stdout)
