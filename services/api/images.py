# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Where the boot path reads images: Glance v2, or the built-in catalog.

Image properties drive scheduling (``hw_cpu_policy``, ``hw_numa_nodes``,
``hw_mem_page_size``, ``trait:*``...), so every boot reads its image.
With ``[glance]`` configured (see :func:`common.conf.glance.is_configured`)
the image comes from ``GET /v2/images/{id}`` of that Glance, with a
timeout and the caller's token when no service credentials are set;
otherwise from the built-in catalog that ``berth-api`` serves itself
(:mod:`services.api.records.images`).

Either way the boot path gets an :class:`Image`: the Glance fields it
checks (status, min_ram, min_disk) and the user properties.
"""

import dataclasses
import logging
import threading

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading

from common.conf import glance as glance_conf
from common import exception
from common.objects import image as image_obj
from services.api.records import images as image_records

LOG = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 30.0
# Glance's own image fields; every other top-level key is a property.
CORE_FIELDS = frozenset((
    'id', 'name', 'status', 'visibility', 'protected', 'os_hidden', 'owner',
    'checksum', 'os_hash_algo', 'os_hash_value', 'size', 'virtual_size',
    'min_ram', 'min_disk', 'disk_format', 'container_format', 'created_at',
    'updated_at', 'tags', 'self', 'file', 'schema', 'direct_url',
    'locations', 'stores'))


class ImageNotFound(exception.NotFound):
    msg_fmt = 'Image %(image_id)s could not be found.'


class ImageServiceUnavailable(exception.BerthException):
    msg_fmt = 'The image service is unavailable: %(reason)s'


@dataclasses.dataclass
class Image(object):
    """The parts of an image the boot path uses."""

    id: str
    name: str
    status: str
    min_ram: int = 0
    min_disk: int = 0
    properties: dict = dataclasses.field(default_factory=dict)

    def to_meta(self):
        """The :class:`common.objects.image.ImageMeta` for RequestSpecs."""
        return image_obj.ImageMeta(id=self.id, name=self.name or '',
                                   min_ram=self.min_ram,
                                   min_disk=self.min_disk,
                                   properties=dict(self.properties))


def from_glance(body):
    """An :class:`Image` of a Glance v2 image document."""
    return Image(id=body['id'], name=body.get('name'),
                 status=body.get('status'),
                 min_ram=int(body.get('min_ram') or 0),
                 min_disk=int(body.get('min_disk') or 0),
                 properties={k: v for k, v in body.items()
                             if k not in CORE_FIELDS})


def image_id_from_ref(image_ref):
    """The image id of an imageRef: an id or a URL ending in one."""
    return str(image_ref).rstrip('/').rsplit('/', 1)[-1]


class GlanceClient(object):
    """GET /v2/images/{id} on the Glance ``[glance]`` names; thread-safe.
    """

    def __init__(self, conf):
        self._conf = conf
        self._adapter = None
        self._lock = threading.Lock()

    def _get_adapter(self):
        if self._adapter is None:
            with self._lock:
                if self._adapter is None:
                    auth = ks_loading.load_auth_from_conf_options(
                        self._conf, 'glance')
                    session = ks_loading.load_session_from_conf_options(
                        self._conf, 'glance', auth=auth)
                    self._adapter = ks_loading.load_adapter_from_conf_options(
                        self._conf, 'glance', session=session, auth=auth)
        return self._adapter

    def get(self, ctxt, image_id):
        """The :class:`Image` ``image_id``.

        :raises ImageNotFound: Glance answered 404 (or 403: not visible).
        :raises ImageServiceUnavailable: no answer, or a server error.
        """
        headers = {'Accept': 'application/json'}
        if not self._conf.glance.auth_type and ctxt.auth_token:
            # NOTE: no service credentials: act as the caller, as Nova
            # does with the user's token.
            headers['X-Auth-Token'] = ctxt.auth_token
        retries = self._conf.glance.num_retries
        for attempt in range(retries + 1):
            try:
                resp = self._get_adapter().get(
                    '/v2/images/%s' % image_id, headers=headers,
                    raise_exc=False,
                    timeout=self._conf.glance.timeout or DEFAULT_TIMEOUT)
            except ks_exc.ClientException as exc:
                reason = str(exc)
            else:
                if resp.status_code in (403, 404):
                    raise ImageNotFound(image_id=image_id)
                if resp.status_code < 500:
                    if resp.status_code >= 400:
                        raise ImageServiceUnavailable(
                            reason='GET image %s answered %d'
                            % (image_id, resp.status_code))
                    return from_glance(resp.json())
                reason = 'HTTP %d' % resp.status_code
            LOG.warning('Glance GET of image %s failed (attempt %d of %d): '
                        '%s', image_id, attempt + 1, retries + 1, reason)
        raise ImageServiceUnavailable(reason=reason)


_CLIENTS = {}
_CLIENTS_LOCK = threading.Lock()


def _glance(conf):
    with _CLIENTS_LOCK:
        found = _CLIENTS.get(id(conf))
        if found is None:
            found = _CLIENTS[id(conf)] = GlanceClient(conf)
        return found


def builtin(conf):
    """True when the built-in catalog is in use (no Glance configured)."""
    return not glance_conf.is_configured(conf)


def get_image(ctxt, conf, image_ref):
    """The :class:`Image` an imageRef names.

    :raises ImageNotFound: no such image (or not visible to the caller).
    :raises ImageServiceUnavailable: Glance could not be asked.
    """
    image_id = image_id_from_ref(image_ref)
    if not builtin(conf):
        return _glance(conf).get(ctxt, image_id)
    try:
        record = image_records.get_image(ctxt, image_id)
    except image_records.ImageNotFound:
        raise ImageNotFound(image_id=image_id)
    if (record['visibility'] not in ('public', 'community') and
            record['owner'] not in (None, ctxt.project_id) and
            not ctxt.is_admin):
        raise ImageNotFound(image_id=image_id)
    return Image(id=record['id'], name=record['name'],
                 status=record['status'], min_ram=record['min_ram'],
                 min_disk=record['min_disk'],
                 properties=dict(record['properties']))


def find_image(ctxt, conf, ref):
    """The :class:`Image` of an id, or else of a name (as the
    ``openstack`` client resolves ``--image``).

    :raises ImageNotFound: no image has that id or name, or several
        have that name (the message then says so).
    :raises ImageServiceUnavailable: Glance could not be asked.
    """
    try:
        return get_image(ctxt, conf, ref)
    except ImageNotFound:
        pass
    if builtin(conf):
        found = [r['id'] for r in image_records.list_images(
            ctxt, project_id=ctxt.project_id, is_admin=ctxt.is_admin,
            filters={'name': ref})]
    else:
        resp = _glance(conf)._get_adapter().get(
            '/v2/images', params={'name': ref}, raise_exc=False,
            headers={'Accept': 'application/json'},
            timeout=conf.glance.timeout or DEFAULT_TIMEOUT)
        if resp.status_code >= 400:
            raise ImageServiceUnavailable(
                reason='GET images answered %d' % resp.status_code)
        found = [body['id'] for body in resp.json().get('images', [])]
    if len(found) > 1:
        raise ImageNotFound(image_id='%s (%d images have that name; use '
                                     'the id)' % (ref, len(found)))
    if not found:
        raise ImageNotFound(image_id=ref)
    return get_image(ctxt, conf, found[0])
