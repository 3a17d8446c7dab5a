# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Key pair material: parse, fingerprint and generate keys as Nova does.

An ``ssh`` public key is OpenSSH's one-line form (``ssh-rsa AAAA...
comment``); its fingerprint is the MD5 of the decoded key blob in colon
hex. An ``x509`` key is a PEM certificate; its fingerprint is the SHA-1
of the DER bytes in colon hex. Generated keys are 2048-bit RSA: the
private key in PEM (PKCS#1), the public key in OpenSSH form. Berth has no
cryptography library among its requirements; the few structures needed
are read and written here (only the standard library is used).
"""

import base64
import binascii
import hashlib
import secrets
import struct

RSA_BITS = 2048
_EXPONENT = 65537
# OpenSSH key types and the blob's first string for each.
SSH_TYPES = frozenset((
    'ssh-rsa', 'ssh-dss', 'ssh-ed25519', 'ecdsa-sha2-nistp256',
    'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521',
    'sk-ssh-ed25519@openssh.com', 'sk-ecdsa-sha2-nistp256@openssh.com'))
_SMALL_PRIMES = (3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53,
                 59, 61, 67, 71, 73, 79, 83, 89, 97, 101, 103, 107, 109)


class InvalidKey(ValueError):
    """Key material that is no public key of the type named."""


def _colon_hex(digest):
    return ':'.join('%02x' % b for b in digest)


def _ssh_strings(blob):
    """The length-prefixed strings an SSH key blob is made of."""
    parts = []
    offset = 0
    while offset < len(blob):
        if offset + 4 > len(blob):
            raise InvalidKey('truncated key blob')
        (size,) = struct.unpack('>I', blob[offset:offset + 4])
        offset += 4
        if offset + size > len(blob):
            raise InvalidKey('truncated key blob')
        parts.append(blob[offset:offset + size])
        offset += size
    return parts


def ssh_fingerprint(public_key):
    """The MD5 colon-hex fingerprint of an OpenSSH public key line.

    :raises InvalidKey: not ``<type> <base64 blob> [comment]`` with a
        blob whose first string is the type.
    """
    fields = (public_key or '').strip().split()
    if len(fields) < 2 or fields[0] not in SSH_TYPES:
        raise InvalidKey('not an OpenSSH public key')
    try:
        blob = base64.b64decode(fields[1], validate=True)
    except (binascii.Error, ValueError):
        raise InvalidKey('the key is not base64')
    parts = _ssh_strings(blob)
    if len(parts) < 2 or parts[0] != fields[0].encode('ascii'):
        raise InvalidKey('the key blob does not match its type')
    return _colon_hex(hashlib.md5(blob, usedforsecurity=False).digest())


def x509_fingerprint(pem):
    """The SHA-1 colon-hex fingerprint of a PEM certificate.

    :raises InvalidKey: no PEM ``CERTIFICATE`` block whose content is a
        DER SEQUENCE.
    """
    text = (pem or '').strip()
    begin, end = '-----BEGIN CERTIFICATE-----', '-----END CERTIFICATE-----'
    if not text.startswith(begin) or end not in text:
        raise InvalidKey('not a PEM certificate')
    body = text[len(begin):text.index(end)]
    try:
        der = base64.b64decode(''.join(body.split()), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidKey('the certificate is not base64')
    if len(der) < 4 or der[0] != 0x30:
        raise InvalidKey('the certificate is not DER')
    return _colon_hex(hashlib.sha1(der, usedforsecurity=False).digest())


def fingerprint(key_type, public_key):
    """The fingerprint of ``public_key`` of ``key_type`` (ssh or x509)."""
    if key_type == 'x509':
        return x509_fingerprint(public_key)
    return ssh_fingerprint(public_key)


def _probably_prime(n, rounds=40):
    if n < 2:
        return False
    for p in _SMALL_PRIMES:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for _ in range(rounds):
        x = pow(secrets.randbelow(n - 3) + 2, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _prime(bits):
    while True:
        # NOTE: the two top bits set so that p * q has all ``2 * bits``.
        candidate = secrets.randbits(bits) | (3 << (bits - 2)) | 1
        if (candidate - 1) % _EXPONENT and _probably_prime(candidate):
            return candidate


def _der_length(size):
    if size < 0x80:
        return bytes([size])
    raw = size.to_bytes((size.bit_length() + 7) // 8, 'big')
    return bytes([0x80 | len(raw)]) + raw


def _der_integer(value):
    raw = value.to_bytes(value.bit_length() // 8 + 1, 'big')
    return b'\x02' + _der_length(len(raw)) + raw


def _mpint(value):
    raw = value.to_bytes(value.bit_length() // 8 + 1, 'big')
    return struct.pack('>I', len(raw)) + raw


def _ssh_string(raw):
    return struct.pack('>I', len(raw)) + raw


def generate(comment='Generated-by-Berth'):
    """A new RSA key pair: (private key PEM, OpenSSH public key line)."""
    half = RSA_BITS // 2
    while True:
        p, q = _prime(half), _prime(half)
        n = p * q
        if p != q and n.bit_length() == RSA_BITS:
            break
    if p < q:
        p, q = q, p
    d = pow(_EXPONENT, -1, (p - 1) * (q - 1))
    fields = (0, n, _EXPONENT, d, p, q, d % (p - 1), d % (q - 1),
              pow(q, -1, p))
    body = b''.join(_der_integer(v) for v in fields)
    der = b'\x30' + _der_length(len(body)) + body
    encoded = base64.b64encode(der).decode('ascii')
    lines = [encoded[i:i + 64] for i in range(0, len(encoded), 64)]
    private = '\n'.join(['-----BEGIN RSA PRIVATE KEY-----'] + lines +
                        ['-----END RSA PRIVATE KEY-----', ''])
    blob = _ssh_string(b'ssh-rsa') + _mpint(_EXPONENT) + _mpint(n)
    public = 'ssh-rsa %s %s' % (base64.b64encode(blob).decode('ascii'),
                                comment)
    return private, public
