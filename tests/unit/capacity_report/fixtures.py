# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A fixed capacity report, the page's offline check, and headless
Chromium (Debian's package; .ci/run installs it when missing) to open a
page with.
"""

import os
import re
import shutil
import subprocess

import pytest

from common.capacity_report import data

CHROMIUM_FLAGS = ('--headless', '--no-sandbox', '--disable-gpu',
                  '--disable-quic', '--no-first-run',
                  '--disable-background-networking',
                  '--disable-component-update', '--disable-sync')


def report(headroom=True):
    """Three hosts in two zones, a full one, a PCPU host; two flavors."""
    return data.Report(
        generated_at='2026-01-01 00:00:00 UTC',
        hosts=[
            data.HostUsage('cmp-a', 'az1', ['fast', 'rack1'],
                           {'VCPU': (4, 64), 'MEMORY_MB': (2048, 65536),
                            'DISK_GB': (10, 1000)}),
            data.HostUsage('cmp-b', 'az1', ['rack1'],
                           {'VCPU': (64, 64), 'MEMORY_MB': (60000, 65536),
                            'DISK_GB': (900, 1000)}),
            data.HostUsage('cmp-c', 'nova', [],
                           {'PCPU': (8, 8), 'MEMORY_MB': (8192, 131072)}),
        ],
        headroom=[data.HeadroomRow('m1.small', 37, {'az1': 30, 'nova': 7}),
                  data.HeadroomRow('pinned.large', 0, {})]
        if headroom else None,
        stranded=[data.StrandedRow('pinned.large', 'MEMORY_MB', 122880, 1,
                                   'no PCPU left on the host')]
        if headroom else None,
        notes=[] if headroom else ['headroom: not here'])


_EXTERNAL = re.compile(
    r'''(?:\b(?:src|href|action|poster|data)\s*=\s*["']?\s*(?:https?:)?//)'''
    r'''|(?:url\(\s*["']?\s*(?:https?:)?//)|@import''', re.I)


def external_references(text):
    """Everything in ``text`` a browser would fetch from elsewhere."""
    return _EXTERNAL.findall(text)


def chromium():
    """The Chromium binary; skips, saying why, where there is none."""
    for name in ('chromium', 'chromium-browser'):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip('no chromium on this machine (Debian: apt-get install -y '
                'chromium; .ci/run installs it)')


def run_chromium(binary, tmp_path, *args):
    """Run headless Chromium with its network features off, a profile
    and a HOME of its own under ``tmp_path``.
    """
    profile = tmp_path / 'profile'
    profile.mkdir(exist_ok=True)
    return subprocess.run(
        [binary] + list(CHROMIUM_FLAGS) + ['--user-data-dir=%s' % profile] +
        list(args), capture_output=True, text=True, timeout=120,
        env=dict(os.environ, HOME=str(tmp_path)))
