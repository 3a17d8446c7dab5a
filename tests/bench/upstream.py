# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. See the License
# for the specific language governing permissions and limitations.
"""Upstream openstack-placement as a benchmark peer, in a private venv.

Upstream's top-level module is ``placement`` and it pins its own oslo and
SQLAlchemy versions, so it never goes into Berth's environment. This module
builds a venv of its own (``$BERTH_BENCH_UPSTREAM_VENV``, default
``.tox/bench-upstream`` in the repository), installs the release from PyPI
with cheroot and the database drivers, writes a ``placement.conf``, runs
``placement-manage db sync`` and serves ``placement.wsgi.api:application``
with cheroot's threaded WSGI server in a separate process.
"""

import os
import subprocess
import sys

from tests.bench import servers

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# NOTE: pinned so that numbers from different runs compare; override with
# BERTH_BENCH_UPSTREAM_PLACEMENT (any pip requirement spec).
PLACEMENT_SPEC = 'openstack-placement==16.0.0'
EXTRA_REQUIREMENTS = ['cheroot', 'PyMySQL', 'psycopg2-binary']
SERVER_THREADS = 8
APP = 'placement.wsgi.api:application'
MARKER = 'berth-bench-requirements.txt'
# NOTE: upstream's processes must see none of Berth's import paths.
ISOLATED_ENV = {'PYTHONPATH': None, 'VIRTUAL_ENV': None}


def venv_path():
    """Return the absolute path of upstream's private venv."""
    path = os.environ.get('BERTH_BENCH_UPSTREAM_VENV', '.tox/bench-upstream')
    return os.path.join(REPO_ROOT, path)


def requirements():
    """Return the pip requirements installed into upstream's venv."""
    spec = os.environ.get('BERTH_BENCH_UPSTREAM_PLACEMENT', PLACEMENT_SPEC)
    return [spec] + EXTRA_REQUIREMENTS


def _bin(venv, name):
    return os.path.join(venv, 'bin', name)


def ensure_venv(venv=None, log=print):
    """Create upstream's venv and install into it, unless already done.

    A marker file in the venv records what was installed; the venv is
    (re)installed when the requirements change.

    :returns: the venv path.
    """
    venv = venv or venv_path()
    wanted = '\n'.join(requirements()) + '\n'
    marker = os.path.join(venv, MARKER)
    if _read(marker) == wanted:
        return venv
    log('Installing %s into %s ...' % (' '.join(requirements()), venv))
    if not os.path.exists(_bin(venv, 'python')):
        # NOTE: run from a venv, -m venv bases the new one on the base
        # interpreter, so nothing of Berth's environment leaks in.
        subprocess.run([sys.executable, '-m', 'venv', venv], check=True,
                       env=_clean_env())
    subprocess.run([_bin(venv, 'python'), '-m', 'pip', 'install', '-q',
                    '--disable-pip-version-check'] + requirements(),
                   check=True, env=_clean_env())
    with open(marker, 'w') as f:
        f.write(wanted)
    return venv


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def installed_version(venv):
    """Return the openstack-placement version installed in ``venv``."""
    code = ('import importlib.metadata as m; '
            'print(m.version("openstack-placement"))')
    out = subprocess.run([_bin(venv, 'python'), '-c', code], check=True,
                         capture_output=True, text=True, env=_clean_env())
    return out.stdout.strip()


def _clean_env():
    return servers.merge_env(ISOLATED_ENV)


def write_config(config_dir, db_url):
    """Write ``placement.conf`` for upstream into ``config_dir``."""
    os.makedirs(config_dir, exist_ok=True)
    return servers.write_config(os.path.join(config_dir, 'placement.conf'), {
        'DEFAULT': {'debug': False},
        'api': {'auth_strategy': 'noauth2'},
        'placement_database': {'connection': db_url,
                               'sync_on_startup': False},
    })


def db_sync(venv, config_file):
    """Run ``placement-manage db sync`` against ``config_file``."""
    result = subprocess.run(
        [_bin(venv, 'placement-manage'), '--config-file', config_file,
         'db', 'sync'],
        capture_output=True, text=True, env=_clean_env())
    if result.returncode != 0:
        raise servers.ServerError('placement-manage db sync failed:\n%s%s' % (
            result.stdout, result.stderr))


def server(venv, workdir, db_url, port, threads=SERVER_THREADS):
    """Prepare the database and return a ServerProcess (not yet started).

    :param workdir: directory for placement.conf and the server log.
    :param db_url: SQLAlchemy URL of an empty database.
    """
    config_dir = os.path.join(workdir, 'upstream-etc')
    config_file = write_config(config_dir, db_url)
    db_sync(venv, config_file)
    argv = [_bin(venv, 'python'), '-m', 'cheroot', APP,
            '--bind', '127.0.0.1:%d' % port,
            '--threads', str(threads), '--max-threads', str(threads)]
    return servers.ServerProcess(
        'upstream placement', argv, 'http://127.0.0.1:%d' % port,
        os.path.join(workdir, 'upstream-placement.log'),
        env=dict(ISOLATED_ENV, OS_PLACEMENT_CONFIG_DIR=config_dir),
        cwd=config_dir)
