# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""CPU list syntax: ``0-3,^2,8`` to a set of ints and back."""


def parse_cpu_spec(spec):
    """The set of CPU ids a CPU list names.

    The syntax of ``vcpu_pin_set``, ``hw:numa_cpus.N`` and the CPU masks:
    comma-separated ids and ``a-b`` ranges, with ``^n`` (or ``^a-b``)
    removing ids again, e.g. ``4-12,^8,15``.

    :param spec: the CPU list string.
    :raises ValueError: on anything that is not this syntax.
    """
    included = set()
    excluded = set()
    for part in (p.strip() for p in str(spec).split(',')):
        if not part:
            continue
        target = included
        if part.startswith('^'):
            target = excluded
            part = part[1:].strip()
        if '-' in part:
            start, _sep, end = part.partition('-')
            first, last = int(start), int(end)
            if first < 0 or last < first:
                raise ValueError('invalid range %r' % part)
            target.update(range(first, last + 1))
        else:
            cpu = int(part)
            if cpu < 0:
                raise ValueError('negative CPU id %r' % part)
            target.add(cpu)
    return included - excluded


def parse_cpu_mask(spec, all_cpus):
    """The CPUs of ``all_cpus`` a mask selects.

    A mask made only of exclusions (``^0-1``) means "all but these", as
    ``hw:cpu_realtime_mask`` is usually written; otherwise the mask lists
    the CPUs it selects (exclusions still apply).

    :raises ValueError: on bad syntax.
    """
    parts = [p.strip() for p in str(spec).split(',') if p.strip()]
    if parts and all(p.startswith('^') for p in parts):
        return set(all_cpus) - parse_cpu_spec(
            ','.join(p[1:] for p in parts))
    return parse_cpu_spec(spec)


def format_cpu_spec(cpus):
    """The shortest CPU list for ``cpus``, e.g. ``0-2,7,8,14-16``.

    NOTE: two adjacent ids are written as ``7,8`` rather than ``7-8``,
    the form libvirt and ``numactl`` print.
    """
    result = []
    run = []
    for cpu in sorted(cpus):
        if run and cpu == run[-1] + 1:
            run.append(cpu)
            continue
        result.extend(_format_run(run))
        run = [cpu]
    result.extend(_format_run(run))
    return ','.join(result)


def _format_run(run):
    if len(run) > 2:
        return ['%d-%d' % (run[0], run[-1])]
    return [str(cpu) for cpu in run]
