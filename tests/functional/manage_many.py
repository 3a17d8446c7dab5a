# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Run several ``berth-manage`` commands in one process, in order.

``python -m tests.functional.manage_many CONF_FILE COMMANDS_JSON``, where
COMMANDS_JSON is a list of argument lists. A stack's set-up is five
commands; each in a process of its own spent most of its time importing
(about 2 s each, 10 s of every stack). The first command that fails ends
the run with its exit code.
"""

import json
import sys

from services.manage import main as manage_main


def run(conf_file, commands):
    """The exit code of the first failing command, else 0."""
    for command in commands:
        code = manage_main.main(['--config-file', conf_file] + command)
        if code:
            print('berth-manage %s failed (%d)' % (' '.join(command), code),
                  file=sys.stderr)
            return code
    return 0


if __name__ == '__main__':
    sys.exit(run(sys.argv[1], json.loads(sys.argv[2])))
