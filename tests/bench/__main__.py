# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. See the License
# for the specific language governing permissions and limitations.
"""Command-line dispatcher: ``python -m tests.bench <benchmark> [options]``.

Each benchmark is a module of this package exposing ``add_arguments(parser)``
and ``run(args) -> int``. Adding one (``scheduler``, ``compute``, ``e2e``) is
one line in ``BENCHMARKS``; modules are imported only when chosen, so one
benchmark's dependencies never break another.
"""

import argparse
import importlib
import sys

# NOTE: name -> (module, one-line help). Keep it sorted.
BENCHMARKS = {
    'capacity': ('tests.bench.capacity',
                 'headroom over 1000 and 10000 hosts, what-if of one host '
                 'of 100 servers on 1000 hosts (in process)'),
    'compute': ('tests.bench.compute',
                'cost of one periodic resource update: a node with 0 to '
                '500 instances, one agent simulating 1000 hosts'),
    'e2e': ('tests.bench.e2e',
            'servers booted through the REST API onto 1000 simulated '
            'hosts: servers/s to ACTIVE, API-to-ACTIVE latency'),
    'placement': ('tests.bench.placement',
                  'allocation candidates latency and claim rate, '
                  'Berth vs upstream openstack-placement'),
    'scheduler': ('tests.bench.scheduler',
                  'select_destinations latency over RabbitMQ at 100 to '
                  '10000 hosts, with the share of each stage'),
}


def build_parser(argv):
    """Build the parser, loading only the benchmark named in ``argv``."""
    parser = argparse.ArgumentParser(
        prog='python -m tests.bench',
        description='Berth benchmarks.')
    subparsers = parser.add_subparsers(dest='benchmark', metavar='BENCHMARK')
    subparsers.required = True
    for name, (module_name, help_text) in BENCHMARKS.items():
        sub = subparsers.add_parser(name, help=help_text,
                                    description=help_text)
        if name in argv:
            module = importlib.import_module(module_name)
            module.add_arguments(sub)
            sub.set_defaults(_run=module.run)
    return parser


def main(argv=None):
    """Parse ``argv`` and run the chosen benchmark; return its exit code."""
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    return args._run(args)


if __name__ == '__main__':
    sys.exit(main())
