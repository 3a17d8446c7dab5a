# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Watching what a function is called with, for tests that count reads."""


def record_calls(monkeypatch, owner, name, pick):
    """Wrap ``owner.<name>`` for the test: each call first appends
    ``pick(*args, **kwargs)`` to the list returned, then runs as before.
    """
    calls = []
    original = getattr(owner, name)

    def recorded(*args, **kwargs):
        calls.append(pick(*args, **kwargs))
        return original(*args, **kwargs)
    monkeypatch.setattr(owner, name, recorded)
    return calls
