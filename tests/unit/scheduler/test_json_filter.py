# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JsonFilter: the query hint's expression language."""

import json

import pytest

from services.scheduler import filters
from services.scheduler.filters import json_filter
from tests.unit.scheduler import fakes

FILTER = json_filter.JsonFilter()


def _host():
    return fakes.host('h1', free_ram_mb=2048, free_disk_mb=200 * 1024,
                      vcpus_total=16, vcpus_used=4,
                      total_usable_ram_mb=4096,
                      cpu_info={'arch': 'x86_64'})


def _passes(query):
    hints = {} if query is None else {'query': [json.dumps(query)]}
    with filters.Rejections() as rejections:
        passed = FILTER.host_passes(_host(), fakes.spec(scheduler_hints=hints))
    reason = rejections.by_host.get(('h1', 'h1'), (None, None))[1]
    return passed, reason


@pytest.mark.parametrize('query,expected', [
    (None, True),
    (['>=', '$free_ram_mb', 1024], True),
    (['>=', '$free_ram_mb', 4096], False),
    (['<', '$free_ram_mb', 4096], True),
    (['>', '$free_ram_mb', 2048], False),
    (['<=', '$free_ram_mb', 2048], True),
    (['=', '$vcpus_total', 16], True),
    (['=', '$vcpus_total', 8], False),
    # the first argument against each of the others
    (['>', '$free_ram_mb', 1024, 512], True),
    (['>', '$free_ram_mb', 1024, 4096], False),
    (['in', '$hypervisor_hostname', 'h1', 'h2'], True),
    (['in', '$hypervisor_hostname', 'h2', 'h3'], False),
    (['=', '$cpu_info.arch', 'x86_64'], True),
    (['not', ['=', '$vcpus_used', 4]], False),
    (['not', ['=', '$vcpus_used', 0]], True),
    (['and', ['>=', '$free_ram_mb', 1024],
      ['>=', '$free_disk_mb', 200 * 1024]], True),
    (['and', ['>=', '$free_ram_mb', 1024],
      ['>=', '$free_disk_mb', 300 * 1024]], False),
    (['or', ['>=', '$free_ram_mb', 4096],
      ['>=', '$free_disk_mb', 200 * 1024]], True),
    (['or', ['>=', '$free_ram_mb', 4096],
      ['<', '$vcpus_total', 2]], False),
    (['and', ['or', ['=', '$vcpus_total', 8], ['=', '$vcpus_total', 16]],
      ['not', ['<', '$total_usable_ram_mb', 1024]]], True),
    # a variable the host lacks drops out: the comparison is false
    (['>=', '$no_such_thing', 1], False),
    (['=', '$cpu_info.model', 'Skylake'], False),
])
def test_query(query, expected):
    assert _passes(query)[0] is expected


@pytest.mark.parametrize('hint,reason', [
    ('[">=", "$free_ram_mb"', 'invalid query hint: not JSON: '),
    ('{"op": ">="}', "invalid query hint: expected a non-empty list, got "
                     "{'op': '>='}"),
    ('[]', 'invalid query hint: expected a non-empty list, got []'),
    ('["~", "$free_ram_mb", 1]', "invalid query hint: unknown operator '~'"),
    ('[1, 2]', 'invalid query hint: unknown operator 1'),
    ('["and", ["like", "$host", "h"]]',
     "invalid query hint: unknown operator 'like'"),
    ('[">=", "$free_ram_mb", "lots"]', 'invalid query hint: cannot compare '),
    ('["=", "$", 1]', "invalid query hint: invalid variable '$'"),
    ('["=", "$_lock", 1]', "invalid query hint: invalid variable '$_lock'"),
])
def test_invalid_query_fails_with_reason(hint, reason):
    spec = fakes.spec(scheduler_hints={'query': [hint]})
    with filters.Rejections() as rejections:
        assert not FILTER.host_passes(_host(), spec)
    name, text = rejections.by_host[('h1', 'h1')]
    assert name == 'JsonFilter'
    assert text.startswith(reason)


def test_unsatisfied_reason():
    query = '[">=", "$free_ram_mb", 4096]'
    spec = fakes.spec(scheduler_hints={'query': [query]})
    with filters.Rejections() as rejections:
        assert not FILTER.host_passes(_host(), spec)
    assert rejections.by_host[('h1', 'h1')] == (
        'JsonFilter', 'does not satisfy query ' + query)


def test_documented_cli_example_across_hosts():
    hosts = [fakes.host('small', free_ram_mb=512),
             fakes.host('big', free_ram_mb=8192)]
    spec = fakes.spec(scheduler_hints={
        'query': ['[">=","$free_ram_mb",1024]']})
    assert [h.host for h in FILTER.filter_all(hosts, spec)] == ['big']


def test_flags():
    assert not FILTER.run_filter_once_per_request
    assert not FILTER.RUN_ON_REBUILD
