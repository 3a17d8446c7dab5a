# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The report's pictures, drawn with matplotlib as inline SVG.

Each function takes plain data and returns the ``<svg>`` element's text
(no XML prolog, text kept as text so that it can be searched and stays
sharp). Figures are built with :class:`matplotlib.figure.Figure`, not
pyplot: no global state, safe in a threaded API worker.
"""

import io

import matplotlib
from matplotlib.figure import Figure
from matplotlib import ticker

#: Most hosts one heat map shows (the busiest); the page says when more.
HEATMAP_HOSTS = 60


def _svg(fig):
    buf = io.StringIO()
    # NOTE: no date or creator metadata: a page of the same data is the
    # same page; text stays text (searchable, no embedded glyphs).
    with matplotlib.rc_context({'svg.fonttype': 'none'}):
        fig.savefig(buf, format='svg', bbox_inches='tight',
                    metadata={'Date': None, 'Creator': None})
    text = buf.getvalue()
    return text[text.index('<svg'):]


def _fig(width, height):
    return Figure(figsize=(width, height))


def utilization_heatmap(hosts, classes, percents):
    """Hosts (rows) by resource class (columns), coloured by use.

    :param percents: per host, per class, the percent used (None: the
        host has no such inventory).
    """
    fig = _fig(1.6 + 1.3 * len(classes), 1.2 + 0.32 * len(hosts))
    ax = fig.add_subplot()
    values = [[-1 if p is None else p for p in row] for row in percents]
    # NOTE: grey (below the scale) for a class the host does not have.
    cmap = matplotlib.colormaps['RdYlGn_r'].with_extremes(under='#dddddd')
    image = ax.imshow(values, cmap=cmap, vmin=0, vmax=100, aspect='auto')
    ax.set_xticks(range(len(classes)), labels=classes)
    ax.set_yticks(range(len(hosts)), labels=hosts)
    ax.xaxis.tick_top()
    for y, row in enumerate(percents):
        for x, percent in enumerate(row):
            ax.text(x, y, '-' if percent is None else '%d%%' % percent,
                    ha='center', va='center', fontsize=8)
    fig.colorbar(image, ax=ax, label='% used', extend='min')
    return _svg(fig)


def headroom_bars(rows, zones):
    """How many more servers of each flavor fit, stacked by zone.

    :param rows: [(flavor, total, {zone: count})].
    """
    fig = _fig(8, 1.0 + 0.45 * max(len(rows), 1))
    ax = fig.add_subplot()
    flavors = [row[0] for row in rows]
    left = [0] * len(rows)
    for zone in zones:
        counts = [row[2].get(zone, 0) for row in rows]
        ax.barh(flavors, counts, left=left, label=zone)
        left = [a + b for a, b in zip(left, counts)]
    for index, row in enumerate(rows):
        ax.text(left[index], index, ' %d' % row[1], va='center')
    ax.invert_yaxis()
    ax.set_xlabel('more servers that fit')
    if zones:
        ax.legend(title='zone', loc='upper left', bbox_to_anchor=(1.08, 1))
    ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    return _svg(fig)


def stranded_bars(rows):
    """Free capacity stranded, per flavor and resource class; each bar
    is labelled with its amount and its number of hosts.

    :param rows: [(label, free, hosts)].
    """
    fig = _fig(8, 1.0 + 0.45 * max(len(rows), 1))
    ax = fig.add_subplot()
    labels = [row[0] for row in rows]
    ax.barh(labels, [row[1] for row in rows], color='#c0504d')
    for index, row in enumerate(rows):
        ax.text(row[1], index, ' %g on %d host%s' % (
            row[1], row[2], '' if row[2] == 1 else 's'), va='center')
    ax.invert_yaxis()
    ax.set_xlabel('free but unusable for the flavor')
    return _svg(fig)


def group_bars(title, counts):
    """Hosts per zone or aggregate.

    :param counts: [(name, hosts)].
    """
    fig = _fig(6, 1.0 + 0.4 * max(len(counts), 1))
    ax = fig.add_subplot()
    ax.barh([c[0] for c in counts], [c[1] for c in counts],
            color='#4f81bd')
    ax.invert_yaxis()
    ax.set_xlabel('hosts')
    ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    ax.set_title(title)
    return _svg(fig)
