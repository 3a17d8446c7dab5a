# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Read requests in the selector thread, hand only whole ones to workers.

cheroot hands every new connection to a worker thread at once, and a
worker then reads the request line, the headers and the body with blocking
reads: a client that connects and sends nothing, sends its headers a byte
at a time or announces a body it never sends holds a worker for the whole
socket timeout, and a handful of them take the server down.

:class:`BoundedConnectionManager` replaces cheroot's connection manager:
its selector thread reads every connection without blocking into a buffer,
bounded in size and time (:class:`Limits`), and puts a connection on the
worker queue only once its request line, headers and (Content-Length)
body are all there. A request over a limit is answered (413, 431, 411, 408)
and closed from the selector thread. Only the bodies of the paths that
stream uploads go to a worker before they arrive, read with a per-read
timeout.
"""

import collections
import logging
import re
import selectors
import ssl
import time

from cheroot import connections as cheroot_connections

LOG = logging.getLogger(__name__)

# The most bytes one recv takes from a socket.
RECV_SIZE = 65536

Verdict = collections.namedtuple('Verdict', 'action status message')
WAIT = Verdict('wait', None, None)
DISPATCH = Verdict('dispatch', None, None)

_HEADER_END = re.compile(rb'\r?\n\r?\n')


def _reject(status, message):
    return Verdict('reject', status, message)


TOO_LARGE = _reject('413 Request Entity Too Large',
                    'The request body is larger than this server accepts.')
HEADERS_TOO_LARGE = _reject(
    '431 Request Header Fields Too Large',
    'The request line and headers are larger than this server accepts.')
NO_LENGTH = _reject('411 Length Required',
                    'A request body must have a Content-Length here.')
BAD_LENGTH = _reject('400 Bad Request',
                     'Malformed or conflicting Content-Length headers.')
TIMED_OUT = _reject('408 Request Timeout',
                    'The request did not arrive in time.')
BUSY = _reject('503 Service Unavailable',
               'Too many connections are open; try again later.')


class Limits(object):
    """How much and how long a server waits for a request.

    :param header_timeout: seconds from a request's first byte to the end
        of its headers.
    :param body_timeout: seconds from the end of the headers to the end of
        a buffered body; also the timeout of every blocking socket read or
        write of a worker (streamed bodies, responses).
    :param idle_timeout: seconds a connection without a request in
        progress stays open.
    :param max_header_size: bytes of request line plus headers.
    :param max_body_size: bytes of a buffered request body.
    :param max_connections: connections open at once.
    :param stream_paths: a compiled regex matched against
        ``b'METHOD /path'``: the requests whose body goes to the
        application as it arrives, unbounded in size (uploads).
    """

    def __init__(self, header_timeout=5, body_timeout=10, idle_timeout=60,
                 max_header_size=65536, max_body_size=114688,
                 max_connections=512, stream_paths=None):
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.idle_timeout = idle_timeout
        self.max_header_size = max_header_size
        self.max_body_size = max_body_size
        self.max_connections = max_connections
        self.stream_paths = stream_paths


class _Incoming(object):
    """The part of a connection's next request read so far."""

    __slots__ = ('buf', 'deadline', 'head_len', 'need', 'scanned',
                 'expect_continue')

    def __init__(self, data=b''):
        self.buf = bytearray(data)
        # Bytes already searched for the end of the headers.
        self.scanned = 0
        # NOTE: monotonic; None while no byte of a request has arrived.
        self.deadline = None
        # Set once the headers are complete: their length, and the bytes
        # the whole request takes.
        self.head_len = None
        self.need = None
        # True while the client waits for "100 Continue" to send its body.
        self.expect_continue = False


def _header_fields(head):
    """``(content_lengths, chunked, expect_continue)`` of a header block."""
    lengths, chunked, expect = [], False, False
    for line in head.split(b'\n')[1:]:
        name, sep, value = line.partition(b':')
        if not sep:
            continue
        name = name.strip().lower()
        value = value.strip()
        if name == b'content-length':
            lengths.append(value)
        elif name == b'transfer-encoding':
            chunked = chunked or value.lower() != b'identity'
        elif name == b'expect':
            expect = value.lower() == b'100-continue'
    return lengths, chunked, expect


def judge(incoming, limits):
    """What to do with a connection given what it has sent so far.

    :returns: :data:`WAIT` (read more), :data:`DISPATCH` (the request is
        complete, or the rest is the application's or cheroot's to read)
        or a reject verdict with the status and message to answer.
    """
    buf = incoming.buf
    if incoming.head_len is None:
        # NOTE: search only what arrived since the last search (and the
        # 3 bytes before it): a trickling client costs linear time.
        match = _HEADER_END.search(buf, max(incoming.scanned - 3, 0))
        if match is None:
            incoming.scanned = len(buf)
            return HEADERS_TOO_LARGE if len(buf) > limits.max_header_size \
                else WAIT
        if match.end() > limits.max_header_size:
            return HEADERS_TOO_LARGE
        verdict = _judge_head(incoming, bytes(buf[:match.start()]),
                              match.end(), limits)
        if verdict is not None:
            return verdict
    return DISPATCH if len(buf) >= incoming.need else WAIT


def _judge_head(incoming, head, head_len, limits):
    """The verdict on complete headers, or None to wait for the body."""
    request_line = head.split(b'\n', 1)[0].split()
    target = b' '.join(request_line[:2]).split(b'?', 1)[0]
    streamed = bool(limits.stream_paths is not None
                    and limits.stream_paths.match(target))
    lengths, chunked, expect = _header_fields(head)
    if chunked:
        return DISPATCH if streamed else NO_LENGTH
    if len(set(lengths)) > 1 or not all(v.isdigit() for v in lengths):
        return BAD_LENGTH
    length = int(lengths[0]) if lengths else 0
    if streamed:
        return DISPATCH
    if length > limits.max_body_size:
        return TOO_LARGE
    incoming.head_len = head_len
    incoming.need = head_len + length
    incoming.deadline = time.monotonic() + limits.body_timeout
    # NOTE: such a client waits for "100 Continue" before it sends the
    # body: the manager sends it (cheroot sends one more later, which
    # HTTP allows).
    incoming.expect_continue = expect and len(incoming.buf) < incoming.need
    return None


def _take_buffered(reader):
    """Remove and return the bytes a cheroot StreamReader holds unread."""
    # NOTE: cheroot's readers are _pyio.BufferedReader objects; their
    # buffer is _read_buf from _read_pos on, guarded by _read_lock.
    with reader._read_lock:
        data = bytes(reader._read_buf[reader._read_pos:])
        reader._read_buf = b''
        reader._read_pos = 0
    return data


def _feed(reader, data):
    """Make ``data`` the next bytes a cheroot StreamReader returns."""
    with reader._read_lock:
        reader._read_buf = bytes(data)
        reader._read_pos = 0


def _recv_nowait(sock):
    """Bytes readable now, b'' at end of stream, None if none yet."""
    try:
        return sock.recv(RECV_SIZE)
    except (BlockingIOError, InterruptedError, ssl.SSLWantReadError,
            ssl.SSLWantWriteError):
        return None
    except OSError:
        return b''


def _answer(conn, verdict):
    """Send a short error response without blocking, then close."""
    body = verdict.message.encode('ascii')
    response = (b'HTTP/1.1 %s\r\nContent-Type: text/plain\r\n'
                b'Content-Length: %d\r\nConnection: close\r\n\r\n%s' % (
                    verdict.status.encode('ascii'), len(body), body))
    _send_nowait(conn, response)
    conn.close()


def _send_nowait(conn, data):
    """Send a few bytes if the socket takes them now; never block."""
    try:
        conn.socket.send(data)
    except (OSError, ValueError):
        pass


class BoundedConnectionManager(cheroot_connections.ConnectionManager):
    """cheroot's connection manager, reading requests before the workers.

    Every method runs in the selector thread except :meth:`put`, which a
    worker calls once it has answered a request on a kept-alive
    connection; :class:`cheroot.connections._ThreadsafeSelector` guards
    the registrations.
    """

    def __init__(self, server, limits):
        super().__init__(server)
        self.limits = limits

    # --- registration -----------------------------------------------------

    def put(self, conn):
        """Wait for the next request on ``conn`` (a worker answered one)."""
        conn.last_used = time.time()
        incoming = _Incoming(_take_buffered(conn.rfile))
        conn.berth_incoming = incoming
        try:
            conn.socket.settimeout(0)
        except OSError:
            conn.close()
            return
        if incoming.buf:
            # NOTE: pipelined bytes of the next request: they no longer make
            # the socket readable, so judge them now.
            incoming.deadline = time.monotonic() + self.limits.header_timeout
            if self._advance(conn, incoming):
                return
        self._selector.register(conn.socket.fileno(), selectors.EVENT_READ,
                                data=conn)

    def _advance(self, conn, incoming, sock_fd=None):
        """Act on a verdict; True if ``conn`` left the selector's care.

        :param sock_fd: the descriptor ``conn`` is registered under, if it
            is.
        """
        verdict = judge(incoming, self.limits)
        if verdict.action == 'wait':
            if incoming.expect_continue:
                incoming.expect_continue = False
                _send_nowait(conn, b'HTTP/1.1 100 Continue\r\n\r\n')
            return False
        if sock_fd is not None:
            self._selector.unregister(sock_fd)
        if verdict.action == 'reject':
            _answer(conn, verdict)
            return True
        _feed(conn.rfile, incoming.buf)
        conn.berth_incoming = None
        conn.socket.settimeout(self.limits.body_timeout)
        self.server.process_conn(conn)
        return True

    # --- the selector loop --------------------------------------------------

    def _run(self, expiration_interval):
        """Accept, read and dispatch until stop() is called."""
        last_expiration_check = time.monotonic()
        while not self._stop_requested:
            try:
                active_list = list(
                    self._selector.select(timeout=expiration_interval))
            except OSError:
                self._remove_invalid_sockets()
                continue
            for sock_fd, conn in active_list:
                if conn is self.server:
                    self._accept()
                else:
                    self._on_readable(sock_fd, conn)
            now = time.monotonic()
            if now - last_expiration_check > expiration_interval:
                self._expire_all(now)
                last_expiration_check = now

    def _accept(self):
        """Accept one connection and wait for its first request."""
        # NOTE: with TLS, cheroot's accept runs the handshake here, in the
        # selector thread, bounded by server.timeout (make_server keeps it
        # to header_timeout); terminate TLS in front where clients are not
        # trusted.
        try:
            conn = self._from_server_socket(self.server.socket)
        except OSError as exc:
            # NOTE: out of descriptors (EMFILE, ENFILE): the listening
            # socket stays readable; log and let the next loop retry once
            # connections have expired rather than end the server.
            LOG.warning('Cannot accept a connection: %s', exc)
            time.sleep(0.05)
            return
        if conn is None:
            return
        if self._num_connections >= self.limits.max_connections \
                and not self._evict_idle():
            _answer(conn, BUSY)
            return
        self.put(conn)

    def _evict_idle(self):
        """Close the least recently used idle connection; False if none."""
        idle = [(conn.last_used, fd, conn)
                for fd, conn in self._selector.connections
                if conn is not self.server and not conn.berth_incoming.buf]
        if not idle:
            return False
        _, fd, conn = min(idle, key=lambda item: item[0])
        self._selector.unregister(fd)
        conn.close()
        return True

    def _on_readable(self, sock_fd, conn):
        """Read what ``conn`` sent; hand it on once its request is whole."""
        incoming = conn.berth_incoming
        limit = self.limits.max_header_size + self.limits.max_body_size
        while len(incoming.buf) <= limit:
            data = _recv_nowait(conn.socket)
            if data is None:
                break
            if not data:
                self._selector.unregister(sock_fd)
                conn.close()
                return
            if not incoming.buf:
                incoming.deadline = (time.monotonic()
                                     + self.limits.header_timeout)
            incoming.buf += data
            # NOTE: an SSL socket may hold decrypted bytes the selector
            # does not see; a plain one is drained by the next select.
            if not isinstance(conn.socket, ssl.SSLSocket):
                break
        conn.last_used = time.time()
        self._advance(conn, incoming, sock_fd)

    def _expire_all(self, now):
        """408 late requests; close connections idle for too long."""
        idle_since = time.time() - self.limits.idle_timeout
        for fd, conn in list(self._selector.connections):
            if conn is self.server:
                continue
            incoming = conn.berth_incoming
            if incoming.buf and incoming.deadline < now:
                self._selector.unregister(fd)
                _answer(conn, TIMED_OUT)
            elif not incoming.buf and conn.last_used < idle_since:
                self._selector.unregister(fd)
                conn.close()
