#!/usr/bin/env python3
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Run the shell commands of README.md and doc/*.md against an all-in-one.

    tools/check-docs.py [--keep] [FILE.md ...]

Every fenced block must name its language (```shell, ```text, ```ini,
```json, ...): an untagged fence fails the check, so that no command
hides in an untagged block. Each line of a ``shell`` block is a command
(``\\`` continues it; a ``$ `` prompt is dropped and, in a prompted block,
the lines without one are output); each runs in bash, in a directory
where ``.venv`` is this Python's virtualenv and ``state`` the state
directory of an all-in-one started for the check (8 hosts, SQLite,
in-process transport, after a run of its demo on the same state), with
``OS_CLOUD=berth`` and ``/etc/berth/berth.conf`` read as the all-in-one's
``berth.conf``. Shell loops and here-documents must fit on one line.
The ``alias``, ``export``, ``cd`` and ``.`` lines of a file so far are
replayed before each command. Any non-zero exit fails the check.

A command that cannot run in CI (several hosts, systemd, devstack, a
placeholder only the reader can fill) is marked in the document, on the
line before its block, with a reason the check prints::

    <!-- doc-check: skip: needs three hosts and systemd -->
    <!-- doc-check: skip-lines "pip install": CI's virtualenv has it -->

``skip`` skips the whole block; ``skip-lines`` the lines of the block
containing the quoted text.
"""

import argparse
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(r'^(\s*)```(\S*)\s*$')
MARKER = re.compile(
    r'<!--\s*doc-check:\s*(skip|skip-lines\s+"([^"]+)")\s*:\s*(.*?)\s*-->')
SHELL = ('shell', 'sh', 'bash', 'console')
REPLAYED = re.compile(r'^(alias|export|cd|\.|source)\s')
READY_TIMEOUT = 180
COMMAND_TIMEOUT = 120


class Block(object):
    """One fenced block: file, first line, language, lines, its markers."""

    def __init__(self, path, line, language, markers):
        self.path = path
        self.line = line
        self.language = language
        self.markers = markers
        self.lines = []

    @property
    def where(self):
        return '%s:%d' % (os.path.relpath(self.path, ROOT), self.line)


def parse(path):
    """The fenced blocks of ``path``, and the errors (untagged fences)."""
    blocks, errors = [], []
    current = None
    markers = []
    with open(path) as f:
        for number, text in enumerate(f, 1):
            text = text.rstrip('\n')
            fence = FENCE.match(text)
            if current is None and fence:
                if not fence.group(2):
                    errors.append('%s:%d: untagged fence (tag it shell, '
                                  'text, ini, json ...)' % (
                                      os.path.relpath(path, ROOT), number))
                current = Block(path, number, fence.group(2), markers)
                markers = []
            elif current is not None and fence and not fence.group(2):
                blocks.append(current)
                current = None
            elif current is not None:
                current.lines.append(text)
            else:
                found = MARKER.search(text)
                if found:
                    markers.append((found.group(2), found.group(3)))
                elif text.strip():
                    markers = []
    return blocks, errors


def commands(block):
    """The commands of a shell block, continuation lines joined."""
    prompted = any(line.lstrip().startswith('$ ') for line in block.lines)
    out, pending = [], ''
    for line in block.lines:
        stripped = line.strip()
        if prompted and not pending:
            if not stripped.startswith('$ '):
                continue
            stripped = stripped[2:]
        if not stripped or (stripped.startswith('#') and not pending):
            continue
        if stripped.endswith('\\'):
            pending += stripped[:-1].rstrip() + ' '
            continue
        out.append(pending + stripped)
        pending = ''
    return out


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class AllInOne(object):
    """A served all-in-one in a scratch directory, for the commands."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.state = os.path.join(workdir, 'state')
        self.proc = None

    def start(self):
        os.symlink(sys.prefix, os.path.join(self.workdir, '.venv'))
        self.out = open(os.path.join(self.workdir, 'all-in-one.out'), 'w')
        env = dict(os.environ, PYTHONPATH=ROOT)
        env.pop('BERTH_EVENTLET', None)
        # NOTE: the demo first, on the same state: the examples of
        # doc/operations.md look at its servers (medium-1 ...).
        demo = subprocess.run(
            [sys.executable, '-m', 'services.allinone.cmd', '--state-dir',
             self.state, '--api-port', str(free_port()),
             '--placement-port', str(free_port()), '--hosts', '8',
             '--demo'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env=env, cwd=self.workdir, timeout=READY_TIMEOUT, text=True)
        if demo.returncode:
            raise SystemExit('the demo failed:\n' + demo.stdout)
        self.proc = subprocess.Popen(
            [sys.executable, '-m', 'services.allinone.cmd', '--state-dir',
             self.state, '--api-port', str(free_port()),
             '--placement-port', str(free_port()), '--hosts', '8'],
            stdout=self.out, stderr=subprocess.STDOUT, env=env,
            cwd=self.workdir, start_new_session=True)
        deadline = time.monotonic() + READY_TIMEOUT
        path = os.path.join(self.workdir, 'all-in-one.out')
        while time.monotonic() < deadline:
            with open(path) as f:
                text = f.read()
            if 'is ready in' in text:
                return
            if self.proc.poll() is not None:
                raise SystemExit('the all-in-one exited:\n' + text)
            time.sleep(0.3)
        raise SystemExit('the all-in-one was not ready in %ds' %
                         READY_TIMEOUT)

    def environ(self):
        bindir = os.path.dirname(sys.executable)
        env = {'PATH': bindir + os.pathsep + os.environ.get('PATH', ''),
               'HOME': self.workdir, 'LANG': 'C.UTF-8',
               'PYTHONPATH': ROOT, 'OS_CLOUD': 'berth',
               'OS_CLIENT_CONFIG_FILE': os.path.join(self.state,
                                                     'clouds.yaml')}
        return env

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def _skip_reason(block, command):
    for pattern, reason in block.markers:
        if pattern is None or pattern in command:
            return reason
    return None


def run_file(path, blocks, aio):
    """Run the commands of one file; returns the number of failures."""
    failures = 0
    replay = []
    conf = os.path.join(aio.state, 'berth.conf')
    for block in blocks:
        if block.language not in SHELL:
            continue
        for command in commands(block):
            reason = _skip_reason(block, command)
            if reason is not None:
                print('SKIP %s: %s\n     (%s)' % (block.where, command,
                                                  reason))
                continue
            command = command.replace('/etc/berth/berth.conf', conf)
            script = '\n'.join(['shopt -s expand_aliases',
                                'set -o pipefail'] + replay + [command])
            started = time.monotonic()
            result = subprocess.run(
                ['bash', '-c', script], cwd=aio.workdir, env=aio.environ(),
                capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
            took = time.monotonic() - started
            if result.returncode:
                failures += 1
                print('FAIL %s: %s (exit %d)\n%s%s' % (
                    block.where, command, result.returncode,
                    result.stdout[-2000:], result.stderr[-2000:]))
            else:
                print('ok   %s: %s (%.1fs)' % (block.where, command, took))
            if REPLAYED.match(command):
                replay.append(command)
    return failures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('files', nargs='*')
    parser.add_argument('--keep', action='store_true',
                        help='keep the scratch directory')
    args = parser.parse_args(argv)
    files = args.files or [os.path.join(ROOT, 'README.md')] + sorted(
        glob.glob(os.path.join(ROOT, 'doc', '*.md')))
    parsed, errors = {}, []
    for path in files:
        parsed[path], found = parse(path)
        errors.extend(found)
    for error in errors:
        print('FAIL ' + error)
    workdir = tempfile.mkdtemp(prefix='berth-docs-')
    aio = AllInOne(workdir)
    failures = len(errors)
    started = time.monotonic()
    try:
        aio.start()
        for path in files:
            failures += run_file(path, parsed[path], aio)
    finally:
        aio.stop()
        if failures or args.keep:
            print('scratch directory kept: %s' % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print('doc check: %s in %.0fs' % (
        '%d failure(s)' % failures if failures else 'passed',
        time.monotonic() - started))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
