# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""How berth-manage commands print: tables and progress lines.

Tables look like nova-manage's (prettytable's default style), so that
operators' eyes and scripts that grep them keep working::

    +-----------+--------------------------------------+----------+
    | Cell Name |              Cell UUID               | Hostname |
    +-----------+--------------------------------------+----------+
    |   cell1   | 4473067d-4c91-459f-93ae-79cb1e1203c7 |  host1   |
    +-----------+--------------------------------------+----------+
"""

import sys
import time

QUIET_HELP = 'No progress line on stderr (shown on a terminal).'


def table(headers, rows):
    """The text of a table with centred cells (ends with a newline)."""
    cells = [[str('' if v is None else v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for index, value in enumerate(row):
            widths[index] = max(widths[index], len(value))
    rule = '+' + '+'.join('-' * (w + 2) for w in widths) + '+'

    def line(values):
        return '|' + '|'.join(' %s ' % v.center(w)
                              for v, w in zip(values, widths)) + '|'
    out = [rule, line(headers), rule]
    out.extend(line(row) for row in cells)
    out.append(rule)
    return '\n'.join(out) + '\n'


class Progress(object):
    """A progress line on stderr: ``<what>: 1200/5000 (310/s)``.

    Long runs (thousands of hosts, instances or providers) show they are
    alive: the line is rewritten in place at most once a ``seconds``, the
    first time after ``seconds`` (a short run prints nothing), and ended
    with a newline by :meth:`finish`. It is shown only on a terminal:
    scripts and logs reading stderr get nothing, nor does ``--quiet``.

    :param total: the number of items, when known (:meth:`expect` adds).
    :param enabled: show it; default: ``stream`` is a terminal.
    """

    def __init__(self, what, total=None, seconds=1.0, stream=None,
                 enabled=None, clock=time.monotonic):
        self.what = what
        self.total = total
        self.seconds = seconds
        self.stream = stream or sys.stderr
        if enabled is None:
            enabled = _isatty(self.stream)
        self.enabled = enabled
        self.clock = clock
        self.count = 0
        self._started = self._last = clock()
        self._shown = False

    def expect(self, amount):
        """``amount`` more items to do."""
        self.total = (self.total or 0) + amount

    def step(self, amount=1):
        """Count ``amount`` more items done; redraw when one is due."""
        self.count += amount
        if not self.enabled:
            return
        now = self.clock()
        if now - self._last >= self.seconds:
            self._last = now
            self._show(now)

    def line(self, now=None):
        """The text of the line: done[/total] and the rate so far."""
        now = self.clock() if now is None else now
        rate = self.count / max(now - self._started, 1e-6)
        done = '%d/%d' % (self.count, self.total) if self.total else \
            '%d' % self.count
        return '%s: %s done (%.0f/s)' % (self.what, done, rate)

    def _show(self, now):
        self.stream.write('\r' + self.line(now))
        self.stream.flush()
        self._shown = True

    def finish(self):
        """Draw the last count and end the line (if one was shown)."""
        if self._shown:
            self._show(self.clock())
            self.stream.write('\n')
            self.stream.flush()
            self._shown = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.finish()


def _isatty(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def progress(args, what, total=None):
    """The :class:`Progress` of a command run with ``args`` (``--quiet``)."""
    return Progress(what, total=total,
                    enabled=False if getattr(args, 'quiet', False) else None)
