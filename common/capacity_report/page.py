# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The capacity report page: one self-contained HTML document.

Sections (each an element with its id, for people and tests):
``utilization`` (heat map of use per host and resource class, then the
figures), ``headroom`` (more servers per flavor, per zone), ``stranded``
(free capacity where a flavor fits no more, with why) and ``placement``
(hosts by zone and aggregate). Pictures are inline SVG from
:mod:`plots`; the style is inline; nothing is fetched, so the file opens
offline.
"""

import collections
import html
import threading

from common.capacity_report import plots

STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }
th { background: #f0f0f0; } td.name { text-align: left; }
.note { background: #fff8e0; border-left: 4px solid #e0b000;
        padding: 4px 8px; }
svg { max-width: 100%; height: auto; }
"""


def _e(value):
    return html.escape(str(value))


def _table(headers, rows, cls='data'):
    out = ['<table class="%s"><tr>%s</tr>' % (
        cls, ''.join('<th>%s</th>' % _e(h) for h in headers))]
    for row in rows:
        cells = ''.join('<td%s>%s</td>' % (
            ' class="name"' if index == 0 else '', _e(v))
            for index, v in enumerate(row))
        out.append('<tr>%s</tr>' % cells)
    out.append('</table>')
    return '\n'.join(out)


def _classes(hosts):
    found = set()
    for host in hosts:
        found.update(host.usage)
    # NOTE: the common classes first, in their usual order.
    order = ['VCPU', 'PCPU', 'MEMORY_MB', 'DISK_GB']
    return [c for c in order if c in found] + sorted(found - set(order))


def _percent(usage, rc):
    if rc not in usage:
        return None
    used, cap = usage[rc]
    return 100.0 * used / cap if cap else 100.0


def _utilization(report):
    hosts = report.hosts
    if not hosts:
        return '<p class="note">No compute host in placement.</p>'
    classes = _classes(hosts)

    def busiest(host):
        return max((_percent(host.usage, rc) or 0) for rc in classes)
    shown = sorted(hosts, key=busiest, reverse=True)[:plots.HEATMAP_HOSTS]
    shown.sort(key=lambda h: h.host)
    parts = [plots.utilization_heatmap(
        [h.host for h in shown], classes,
        [[_percent(h.usage, rc) for rc in classes] for h in shown])]
    if len(hosts) > len(shown):
        parts.append('<p class="note">The heat map shows the %d busiest '
                     'of %d hosts; the table has them all.</p>'
                     % (len(shown), len(hosts)))
    rows = []
    for host in hosts:
        rows.append([host.host, host.zone] + [
            '%d / %d' % host.usage[rc] if rc in host.usage else '-'
            for rc in classes])
    parts.append(_table(['host', 'zone'] + ['%s used / capacity' % rc
                                            for rc in classes], rows))
    return '\n'.join(parts)


def _headroom(report):
    if report.headroom is None:
        return '<p class="note">Not available (see the notes above).</p>'
    if not report.headroom:
        return '<p>No flavor to report on.</p>'
    zones = sorted({z for row in report.headroom for z in row.per_zone})
    rows = [(r.flavor, r.total, r.per_zone) for r in report.headroom]
    return '\n'.join([
        plots.headroom_bars(rows, zones),
        _table(['flavor', 'more servers'] + zones, [
            [r.flavor, r.total] + [r.per_zone.get(z, 0) for z in zones]
            for r in report.headroom])])


def _stranded(report):
    if report.stranded is None:
        return '<p class="note">Not available (see the notes above).</p>'
    if not report.stranded:
        return '<p>No stranded capacity.</p>'
    rows = [('%s: %s' % (r.flavor, r.resource_class), r.free, r.hosts)
            for r in report.stranded]
    return '\n'.join([
        plots.stranded_bars(rows),
        _table(['flavor', 'resource class', 'free', 'hosts', 'why'], [
            [r.flavor, r.resource_class, r.free, r.hosts, r.reason]
            for r in report.stranded])])


def _placement(report):
    zones = collections.Counter(h.zone for h in report.hosts)
    aggregates = collections.Counter()
    for host in report.hosts:
        aggregates.update(host.aggregates)
    parts = []
    if zones:
        parts.append(plots.group_bars('hosts per availability zone',
                                      sorted(zones.items())))
    if aggregates:
        parts.append(plots.group_bars('hosts per aggregate',
                                      sorted(aggregates.items())))
    parts.append(_table(['host', 'zone', 'aggregates'], [
        [h.host, h.zone, ', '.join(h.aggregates) or '-']
        for h in report.hosts]))
    return '\n'.join(parts)


# NOTE: matplotlib's text layout and font cache are not made for threads;
# berth-api serves requests on several, so one page is drawn at a time.
_DRAWING = threading.Lock()

SECTIONS = (
    ('utilization', 'Utilization per host and resource class', _utilization),
    ('headroom', 'Headroom per flavor', _headroom),
    ('stranded', 'Stranded capacity', _stranded),
    ('placement', 'Hosts by zone and aggregate', _placement),
)


def render(report):
    """The whole page for a :class:`~common.capacity_report.data.Report`.
    """
    body = ['<h1>Berth capacity report</h1>',
            '<p id="generated">Generated %s: %d compute host%s.</p>' % (
                _e(report.generated_at), len(report.hosts),
                '' if len(report.hosts) == 1 else 's')]
    if report.notes:
        body.append('<div id="notes">%s</div>' % ''.join(
            '<p class="note">%s</p>' % _e(n) for n in report.notes))
    with _DRAWING:
        for section_id, title, draw in SECTIONS:
            body.append('<section id="%s"><h2>%s</h2>\n%s\n</section>' % (
                section_id, _e(title), draw(report)))
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<title>Berth capacity report</title><style>%s</style></head>'
            '<body>\n%s\n</body></html>\n' % (STYLE, '\n'.join(body)))
