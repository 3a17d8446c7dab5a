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
    """Prints "<what>: N done" every ``every`` items or ``seconds``.

    Long runs (thousands of instances or providers) show they are alive;
    short ones print nothing but the final line, if any.
    """

    def __init__(self, what, every=500, seconds=10.0, stream=None,
                 clock=time.monotonic):
        self.what = what
        self.every = every
        self.seconds = seconds
        self.stream = stream or sys.stdout
        self.clock = clock
        self.count = 0
        self._last = clock()

    def step(self, amount=1):
        """Count ``amount`` more items; print when one is due."""
        self.count += amount
        now = self.clock()
        if (self.every and self.count % self.every == 0) or (
                now - self._last >= self.seconds):
            self._last = now
            print('%s: %d done' % (self.what, self.count), file=self.stream,
                  flush=True)
