# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The hostname of a server (``OS-EXT-SRV-ATTR:hostname``).

As in Nova, a server is given a hostname when it is created: its name
made into one (:func:`sanitize`), or ``Server-<uuid>`` when nothing of
the name is left. From 2.90 a user chooses it when creating (one server
only), updating or rebuilding the server: 2 to 63 letters, digits and
hyphens, neither first nor last; from 2.94 a fully qualified domain name
(up to 255 letters, digits, hyphens, dots and underscores). The hostname
is kept in the instance's ``hostname`` column; Berth has no metadata
service or DNS that would publish it, so it is what the API shows and
filters on (``hostname``, admins always, anybody from 2.90).
"""

import re

from services.api import errors

HOSTNAME_VERSION = (2, 90)
FQDN_VERSION = (2, 94)

# 2.90: a single DNS label.
HOSTNAME = {'type': 'string', 'minLength': 2, 'maxLength': 63,
            'pattern': '^[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]$'}
# 2.94: Nova's fqdn type (as for a host name in other bodies).
FQDN = {'type': 'string', 'minLength': 1, 'maxLength': 255,
        'pattern': '^[a-zA-Z0-9-._]*$'}

MAX_LENGTH = 63
MULTIPLE = 'Unable to allocate a single hostname to multiple instances'


def schema_for(version):
    """The ``hostname`` schema at ``version``, None below 2.90."""
    if version >= FQDN_VERSION:
        return FQDN
    if version >= HOSTNAME_VERSION:
        return HOSTNAME
    return None


def sanitize(name, default=None):
    """``name`` as a hostname, Nova's way: only Latin-1 characters kept,
    cut to 63 characters, blanks, underscores and dots made hyphens,
    anything else but letters, digits and hyphens dropped, lower case, no
    hyphen at either end; ``default`` when nothing is left.
    """
    text = (name or '').encode('latin-1', 'ignore').decode('latin-1')
    text = text[:MAX_LENGTH]
    text = re.sub(r'[ _.]', '-', text)
    text = re.sub(r'[^\w.-]+', '', text)
    text = text.lower().strip('.-')
    if not text and default is not None:
        return default[:MAX_LENGTH]
    return text


def for_new_server(uuid, display_name, chosen=None):
    """The hostname of a server being created: the one chosen (2.90) or
    its sanitized name.
    """
    if chosen:
        return chosen
    return sanitize(display_name, 'Server-%s' % uuid)


def check_count(chosen, max_count):
    """400 for a hostname chosen for several servers at once."""
    if chosen and max_count > 1:
        raise errors.BadRequest(MULTIPLE)


def of(instance):
    """The server's hostname; its sanitized name for a row written before
    hostnames were kept.
    """
    return instance.hostname or for_new_server(instance.uuid,
                                               instance.display_name)
