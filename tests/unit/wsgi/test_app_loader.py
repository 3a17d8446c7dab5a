# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The WSGI application factory: config file from the environment, lazy."""

import threading

import pytest
import webob

from common import config
from common.wsgi import app_loader


@pytest.fixture
def loads(monkeypatch):
    """Record what load() parses and sets up instead of doing it."""
    seen = []
    monkeypatch.setattr(config, 'parse_args',
                        lambda args: seen.append(('args', args)) or 'conf')
    monkeypatch.setattr(config, 'setup_logging',
                        lambda name: seen.append(('log', name)))
    return seen


def _build(conf):
    def app(environ, start_response):
        start_response('200 OK', [])
        return [conf.encode()]
    return app


def test_config_file_from_the_environment(loads, monkeypatch, tmp_path):
    path = tmp_path / 'berth.conf'
    path.write_text('[DEFAULT]\n')
    monkeypatch.setenv('BERTH_CONFIG_FILE', str(path))
    app = app_loader.load('berth-test', _build)
    assert loads == [('args', ['--config-file', str(path)]),
                     ('log', 'berth-test')]
    assert webob.Request.blank('/').get_response(app).body == b'conf'


def test_missing_config_file_means_defaults(loads, monkeypatch, tmp_path):
    monkeypatch.setenv('BERTH_CONFIG_FILE', str(tmp_path / 'absent.conf'))
    app_loader.load('berth-test', _build)
    assert loads[0] == ('args', [])


def test_explicit_config_file_wins(loads, monkeypatch, tmp_path):
    path = tmp_path / 'mine.conf'
    path.write_text('')
    monkeypatch.setenv('BERTH_CONFIG_FILE', '/nonexistent')
    app_loader.load('berth-test', _build, config_file=str(path))
    assert loads[0] == ('args', ['--config-file', str(path)])


def test_lazy_application_builds_once_on_first_request(loads):
    built = []

    def build(conf):
        built.append(conf)
        return _build(conf)

    app = app_loader.LazyApplication('berth-test', build)
    assert app.app is None and not loads
    threads = [threading.Thread(
        target=webob.Request.blank('/').get_response, args=(app,))
        for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert built == ['conf']
    assert webob.Request.blank('/').get_response(app).body == b'conf'
