# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The ``details`` of a failed instance action event (compute API 2.84).

Nova records what went wrong with a failed event the way it words a
server's fault: the exception's own message when it is one of its own
exceptions, otherwise only the exception's class name, since the message
of a library's exception may carry what a user must not see (addresses,
credentials in URLs). Berth's services record a failed event with the
traceback of the exception that failed it, so the details are read from
that traceback's last exception: its message when the exception is
Berth's (a class of the ``common`` or ``services`` packages), else its
class name.
"""

import re

_HEADER = 'Traceback (most recent call last):'
# The exception line after the frames: ``package.module.Class: message``
# (builtins have no module), the message possibly over several lines.
_EXCEPTION = re.compile(r'^(?P<name>[A-Za-z_][\w.]*)(?::\s?(?P<message>.*))?$',
                        re.DOTALL)
_OWN_PACKAGES = ('common.', 'services.')
MAX_LENGTH = 255


def from_traceback(text):
    """The details of an event failed with the traceback ``text``.

    :returns: the message or class name, at most 255 characters, or None
        when ``text`` is no traceback.
    """
    if not text or _HEADER not in text:
        return None
    tail = text[text.rindex(_HEADER) + len(_HEADER):].splitlines()
    # NOTE: the frames are indented; the exception starts at the first
    # line that is not.
    lines = [line for line in tail if line.strip()]
    while lines and lines[0][:1].isspace():
        lines.pop(0)
    match = _EXCEPTION.match('\n'.join(lines).strip())
    if match is None:
        return None
    name = match.group('name')
    message = (match.group('message') or '').strip()
    if name.startswith(_OWN_PACKAGES) and message:
        return message[:MAX_LENGTH]
    return name.rsplit('.', 1)[-1]
