# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The capacity report page in a real headless Chromium, offline.

Chromium (Debian's package; .ci/run installs it when missing) opens the
written file with its network features off, takes a screenshot and dumps
the DOM it built; the page must draw (a non-trivial PNG) and hold its
sections and pictures. Skipped, saying why, only where there is no
Chromium.
"""

import struct

import pytest

from common.capacity_report import page
from tests.unit.capacity_report import fixtures


@pytest.fixture
def written(tmp_path):
    path = tmp_path / 'report.html'
    path.write_text(page.render(fixtures.report()), encoding='utf-8')
    return path


def test_the_page_renders_in_headless_chromium(written, tmp_path):
    chromium = fixtures.chromium()
    shot = tmp_path / 'report.png'
    result = fixtures.run_chromium(chromium, tmp_path,
                                   '--window-size=1280,2000',
                                   '--screenshot=%s' % shot,
                                   written.as_uri())
    assert shot.exists(), result.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b'\x89PNG\r\n\x1a\n'
    width, height = struct.unpack('>II', png[16:24])
    assert (width, height) == (1280, 2000)
    # NOTE: a blank page compresses to a few kB; five plots and tables
    # take far more.
    assert len(png) > 40000


def test_the_dom_holds_the_sections_and_pictures(written, tmp_path):
    chromium = fixtures.chromium()
    result = fixtures.run_chromium(chromium, tmp_path, '--dump-dom',
                                   written.as_uri())
    dom = result.stdout
    assert dom, result.stderr[-2000:]
    for section in ('utilization', 'headroom', 'stranded', 'placement'):
        assert 'id="%s"' % section in dom
    assert dom.count('<svg') == 5
    for text in ('Berth capacity report', 'cmp-b', 'm1.small',
                 'no PCPU left on the host'):
        assert text in dom
    assert fixtures.external_references(dom) == []
