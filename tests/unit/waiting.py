# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Waiting in tests for what another thread or process does."""

import time


def wait_for(predicate, timeout=10, interval=0.02):
    """True once ``predicate()`` holds, polling until ``timeout`` seconds;
    its last value otherwise.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
