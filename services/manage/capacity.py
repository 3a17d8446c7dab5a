# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage capacity ...``: the capacity commands.

Each command lives in a module of its own listed in :data:`COMMANDS`,
which adds itself with ``add_parser(commands)``.
"""

import importlib

COMMANDS = ('services.manage.capacity_report',)


def add_parsers(subparsers):
    """Add ``capacity`` and its commands to berth-manage's parser."""
    parser = subparsers.add_parser('capacity', help='Capacity commands.')
    commands = parser.add_subparsers(dest='capacity_command',
                                     metavar='<command>')
    commands.required = True
    for name in COMMANDS:
        importlib.import_module(name).add_parser(commands)
