# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The request limits of the built-in HTTP servers, one list per group.

``[api]`` (``berth-api``) and ``[placement_api]``
(``berth-placement-api``) each get their own copy of these options, so
each API can be tuned alone; the all-in-one reads both groups.
"""

from oslo_config import cfg

# NOTE: oslo.middleware's [oslo_middleware] max_request_body_size
# default: a JSON API request never needs more.
JSON_BODY_SIZE = 114688


def server_opts(program, max_body_size=JSON_BODY_SIZE, streamed=None):
    """The options of one API's built-in server.

    :param program: the server's console script, for the help texts.
    :param max_body_size: the default of ``max_request_body_size``.
    :param streamed: a sentence naming the requests whose body is streamed
        and not bounded by ``max_request_body_size``, if any.
    """
    body_note = ('\n%s\n' % streamed) if streamed else ''
    return [
        cfg.IntOpt(
            'header_timeout', default=5, min=1,
            help="""
Seconds a client of the %(program)s built-in server has, from the first
byte of a request, to send the request line and all its headers.

A late request is answered with 408 and its connection closed. Requests
are read without a worker thread, so a slow client never holds one.

Possible values:

* A positive number of seconds.

Related options:

* body_timeout, idle_timeout
""" % {'program': program}),
        cfg.IntOpt(
            'body_timeout', default=10, min=1,
            help="""
Seconds a client of the %(program)s built-in server has, once its headers
are in, to send the whole request body; also the timeout of each socket
read of a streamed upload and of each write of a response.

A late body is answered with 408 and its connection closed.
%(body_note)s
Possible values:

* A positive number of seconds.

Related options:

* header_timeout, max_request_body_size
""" % {'program': program, 'body_note': body_note}),
        cfg.IntOpt(
            'idle_timeout', default=60, min=1,
            help="""
Seconds a connection to the %(program)s built-in server stays open with no
request in progress (new connections and kept-alive ones alike).

Possible values:

* A positive number of seconds.

Related options:

* max_connections
""" % {'program': program}),
        cfg.IntOpt(
            'max_header_size', default=65536, min=1024,
            help="""
The most bytes the request line and headers of one request to the
%(program)s built-in server may take; a larger request is answered with 431.

Possible values:

* A number of bytes, at least 1024. Keystone tokens are a few hundred
  bytes; raise this only for clients that send very large headers.

Related options:

* header_timeout
""" % {'program': program}),
        cfg.IntOpt(
            'max_request_body_size', default=max_body_size, min=1024,
            help="""
The most bytes one request body to the %(program)s built-in server may
take; a request announcing more is answered with 413 before any byte of
its body is read. A body without a Content-Length (chunked) is answered
with 411.
%(body_note)s
Possible values:

* A number of bytes, at least 1024.

Related options:

* body_timeout
""" % {'program': program, 'body_note': body_note}),
        cfg.IntOpt(
            'max_connections', default=512, min=16,
            help="""
The most client connections the %(program)s built-in server keeps open.

At the limit a new client takes the place of the connection idle for the
longest; with none idle it is answered with 503. Each connection costs a
file descriptor: keep this well under the process's descriptor limit
(``LimitNOFILE`` of its systemd unit, 1024 by default).

Possible values:

* A number of connections, at least 16.

Related options:

* idle_timeout
""" % {'program': program}),
    ]
