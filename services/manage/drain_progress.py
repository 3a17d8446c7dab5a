# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The progress of a host drain, on stderr.

    drain host3: 3/10 moved, 1 left, 0 failed, 2 moving | 1.5/min | ETA 4m40s

On a terminal that one line is rewritten in place at each event (a move
asked for or resumed, a confirmation, a server done); otherwise (a log,
a pipe) each event is a line of its own with the counts after it, so
that a script or a journal keeps the whole story::

    moved vm-3 (6f1c...) compute3 -> compute1 [live, 12s] | 3/10 moved, ...

The rate counts the moves that ended (moved or failed) per minute since
the first one was asked for; the ETA divides what is left to do by it.
"""

import sys
import threading
import time

from services.manage import drain_moves as moves
from services.manage import output


def duration(seconds):
    """``42s``, ``4m40s``, ``2h05m``."""
    seconds = int(round(seconds))
    if seconds < 60:
        return '%ds' % seconds
    if seconds < 3600:
        return '%dm%02ds' % divmod(seconds, 60)
    return '%dh%02dm' % (seconds // 3600, seconds % 3600 // 60)


class DrainProgress(object):
    """A drain's listener (services.manage.drain_moves.Drain) that shows
    its counts; thread-safe.

    :param host: the drained host.
    :param stream: where to write (stderr by default).
    :param tty: rewrite one line in place; default: ``stream`` is a
        terminal.
    """

    def __init__(self, host, stream=None, tty=None, clock=time.monotonic):
        self.host = host
        self.stream = stream or sys.stderr
        self.tty = output._isatty(self.stream) if tty is None else tty
        self.clock = clock
        self.total = 0
        self.counts = {moves.MOVED: 0, moves.LEFT: 0, moves.FAILED: 0,
                       moves.GONE: 0}
        self.moving = set()
        self._first = None
        self._lock = threading.Lock()
        self._shown = False

    def expect(self, amount):
        """``amount`` more servers to account for."""
        with self._lock:
            self.total += amount

    def __call__(self, event, task):
        with self._lock:
            self._count(event, task)
            if self.tty:
                self._write('\r\x1b[K' + self.line())
                self._shown = True
            else:
                self._write('%s | %s\n' % (_event_text(event, task),
                                           self.line()))

    def _count(self, event, task):
        if event in ('started', 'resumed'):
            self.moving.add(task.server)
            if self._first is None:
                self._first = self.clock()
        elif event == 'ended':
            self.moving.discard(task.server)
            if task.outcome == moves.RETURNED:
                # NOTE: it is planned again, and counted again then.
                self.total -= 1
            elif task.outcome in self.counts:
                self.counts[task.outcome] += 1

    def line(self):
        """The counts, the rate and the ETA."""
        done = sum(self.counts.values())
        text = 'drain %s: %d/%d moved, %d left, %d failed, %d moving' % (
            self.host, self.counts[moves.MOVED], self.total,
            self.counts[moves.LEFT], self.counts[moves.FAILED],
            len(self.moving))
        if self.counts[moves.GONE]:
            text += ', %d deleted' % self.counts[moves.GONE]
        ended = self.counts[moves.MOVED] + self.counts[moves.FAILED]
        if self._first is None or not ended:
            return text
        minutes = max(self.clock() - self._first, 1e-3) / 60.0
        rate = ended / minutes
        text += ' | %.1f/min' % rate
        remaining = self.total - done
        if remaining > 0:
            text += ' | ETA %s' % duration(remaining / rate * 60.0)
        return text

    def finish(self):
        """End the in-place line, if one was shown."""
        with self._lock:
            if self._shown:
                self._write('\n')
                self._shown = False

    def _write(self, text):
        self.stream.write(text)
        self.stream.flush()


def _event_text(event, task):
    name = '%s (%s)' % (task.name or '-', task.server)
    if event == 'started':
        return 'moving %s %s -> %s (%s)' % (name, task.source,
                                            task.destination, task.kind)
    if event == 'resumed':
        return 'waiting for %s: %s from %s' % (name, task.why, task.source)
    if event == 'confirming':
        return 'confirming %s on %s' % (name, task.destination)
    if task.outcome == moves.MOVED:
        return 'moved %s %s -> %s [%s, %s]%s' % (
            name, task.source, task.host, task.kind or 'resumed',
            duration((task.ended or 0) - (task.started or 0)),
            ': %s' % task.detail if task.detail else '')
    return '%s %s: %s' % (task.outcome, name, task.detail)
