# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The capacity report page, rendered from fixed data."""

import html.parser

from common.capacity_report import data
from common.capacity_report import page
from common.capacity_report import plots
from tests.unit.capacity_report import fixtures


class _Elements(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = []
        self.tags = []
        self.text = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.ids.extend(v for k, v in attrs if k == 'id')

    def handle_data(self, text):
        self.text.append(text)


def _parsed(text):
    parser = _Elements()
    parser.feed(text)
    return parser


def test_every_section_with_its_picture_and_figures():
    text = page.render(fixtures.report())
    parsed = _parsed(text)
    for section in ('generated', 'utilization', 'headroom', 'stranded',
                    'placement'):
        assert section in parsed.ids
    # NOTE: heat map, headroom, stranded, hosts per zone and per
    # aggregate: five pictures, drawn by matplotlib.
    assert parsed.tags.count('svg') == 5
    words = ' '.join(parsed.text)
    for expected in ('cmp-a', 'cmp-b', 'cmp-c', 'PCPU', 'm1.small',
                     'pinned.large', 'no PCPU left on the host', 'rack1',
                     '64 / 64', '37', 'az1', '% used'):
        assert expected in words, expected
    assert '3 compute hosts' in words


def test_the_page_fetches_nothing():
    text = page.render(fixtures.report())
    assert fixtures.external_references(text) == []
    assert '<script' not in text and '<link' not in text


def test_without_headroom_the_page_says_so():
    text = page.render(fixtures.report(headroom=False))
    parsed = _parsed(text)
    assert 'notes' in parsed.ids
    assert 'headroom: not here' in text
    assert text.count('Not available (see the notes above).') == 2
    assert parsed.tags.count('svg') == 3


def test_many_hosts_heat_map_shows_the_busiest():
    hosts = [data.HostUsage('h%04d' % i, 'nova', [],
                            {'VCPU': (i % 17, 16)}) for i in range(200)]
    text = page.render(data.Report(generated_at='now', hosts=hosts))
    assert ('The heat map shows the %d busiest of 200 hosts'
            % plots.HEATMAP_HOSTS) in text
    # NOTE: the tables (utilization, zones and aggregates) still list
    # every host.
    assert text.count('<td class="name">h0') == 2 * 200


def test_an_empty_cloud():
    text = page.render(data.Report(generated_at='now'))
    assert 'No compute host in placement.' in text


def test_capacity_counts_reserved_and_ratio():
    assert data.capacity({'total': 16, 'reserved': 2,
                          'allocation_ratio': 4.0}) == 56
    assert data.capacity({'total': 10}) == 10
