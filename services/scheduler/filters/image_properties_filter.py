# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ImagePropertiesFilter: architecture, hypervisor and VM mode of an image."""

import functools
import operator
import re

import common.conf
from services.scheduler import filters

CONF = common.conf.CONF

# NOTE: the aliases Nova folds into one canonical name, so that an image
# tagged 'amd64' runs on a host reporting 'x86_64'.
_ARCH_ALIASES = {'amd64': 'x86_64', 'x64': 'x86_64', 'i386': 'i686',
                 'i486': 'i686', 'i586': 'i686', 'x86_32': 'i686'}
_HV_TYPE_ALIASES = {'xapi': 'xen'}
_VM_MODE_ALIASES = {'pv': 'xen', 'hv': 'hvm', 'baremetal': 'hvm'}

_VERSION_OPS = {'>=': operator.ge, '<=': operator.le, '>': operator.gt,
                '<': operator.lt, '==': operator.eq, '!=': operator.ne}
_PREDICATE = re.compile(r'^\s*(>=|<=|==|!=|>|<)?\s*(\d+(?:\.\d+)*)\s*$')


def _canonical(value, aliases):
    """Lower-cased ``value`` with its alias resolved; None stays None."""
    if not value:
        return None
    value = str(value).strip().lower()
    return aliases.get(value, value)


def _version_tuple(text):
    """'2.6' -> (2, 6, 0): dotted versions compared with zero padding."""
    parts = [int(part) for part in text.split('.')]
    return tuple(parts + [0] * (3 - len(parts)))


def _host_version(version):
    """A hypervisor version integer (8002000) as a tuple (8, 2, 0)."""
    version = int(version)
    return (version // 1000000, version // 1000 % 1000, version % 1000)


def version_satisfied(requirement, host_version):
    """Whether ``host_version`` meets a predicate such as ``'>=2.6, <3'``.

    :param requirement: comma-separated ``<op><dotted version>`` terms
        (no operator means ``==``), all of which must hold.
    :param host_version: the host's ``hypervisor_version`` integer
        (major * 1000000 + minor * 1000 + micro).
    :raises ValueError: for a term that is not such a predicate.
    """
    host = _host_version(host_version)
    for term in str(requirement).split(','):
        found = _PREDICATE.match(term)
        if not found:
            raise ValueError('invalid version predicate %r' % term.strip())
        op = _VERSION_OPS[found.group(1) or '==']
        if not op(host, _version_tuple(found.group(2))):
            return False
    return True


@functools.lru_cache(maxsize=1024)
def _canonical_triple(arch, hv_type, vm_mode):
    """A host triple's canonical (arch, hv_type, vm_mode).

    NOTE: cached: a cloud has a handful of distinct triples, and each
    request would otherwise canonicalise every one of every candidate.
    """
    return (_canonical(arch, _ARCH_ALIASES),
            _canonical(hv_type, _HV_TYPE_ALIASES),
            _canonical(vm_mode, _VM_MODE_ALIASES))


def _supports(triple, arch, hv_type, vm_mode):
    """Whether one [arch, hv_type, vm_mode] host triple fits the image."""
    if len(triple) != 3:
        return False
    try:
        host_arch, host_hv, host_mode = _canonical_triple(*triple)
    except TypeError:
        # An unhashable value cannot be cached; it is canonicalised anyway.
        host_arch, host_hv, host_mode = _canonical_triple.__wrapped__(
            *triple)
    # NOTE: images say 'qemu' for both QEMU and KVM guests (Nova's image
    # property documentation); a KVM-capable host runs either.
    hv_ok = (not hv_type or hv_type == host_hv
             or (hv_type == 'qemu' and host_hv == 'kvm'))
    return ((not arch or arch == host_arch) and hv_ok
            and (not vm_mode or vm_mode == host_mode))


class ImagePropertiesFilter(filters.BaseHostFilter):
    """Pass hosts able to run the image's architecture, hypervisor, VM mode.

    The image properties ``hw_architecture`` (default
    ``[filter_scheduler] image_properties_default_architecture``),
    ``img_hv_type`` and ``hw_vm_mode`` are canonicalised and must all
    appear in one of the host's ``supported_instances`` triples; when the
    image also sets ``img_hv_requested_version`` (``>=2.6``) the host's
    ``hypervisor_version`` must satisfy it (a host or image without a
    version passes that check). An image with none of the three
    properties passes everywhere.
    """

    # NOTE: the image does not change within a request, and a rebuild with
    # a new image must still land on a host able to run it.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = True

    def host_passes(self, host_state, spec_obj):
        """True when the host supports the image's requirements."""
        wanted = self._wanted(spec_obj)
        return wanted is None or self._passes(host_state, wanted)

    def filter_all(self, host_states, spec_obj):
        """Yield the hosts that pass; the image is read once per pass."""
        wanted = self._wanted(spec_obj)
        for host_state in host_states:
            if wanted is None or self._passes(host_state, wanted):
                yield host_state

    @staticmethod
    def _wanted(spec_obj):
        """(arch, hv_type, vm_mode, text, properties), or None for any."""
        props = spec_obj.image.properties if spec_obj.image else {}
        arch = _canonical(
            props.get('hw_architecture')
            or CONF.filter_scheduler.image_properties_default_architecture,
            _ARCH_ALIASES)
        hv_type = _canonical(props.get('img_hv_type'), _HV_TYPE_ALIASES)
        vm_mode = _canonical(props.get('hw_vm_mode'), _VM_MODE_ALIASES)
        if not (arch or hv_type or vm_mode):
            return None
        text = 'architecture %s, hypervisor %s, vm mode %s' % (
            arch or 'any', hv_type or 'any', vm_mode or 'any')
        return arch, hv_type, vm_mode, text, props

    def _passes(self, host_state, wanted):
        arch, hv_type, vm_mode, text, props = wanted
        if not host_state.supported_instances:
            return self.reject(
                host_state, 'image requires %s but the host advertises no '
                'supported instances', text)
        if not any(_supports(triple, arch, hv_type, vm_mode)
                   for triple in host_state.supported_instances):
            return self.reject(
                host_state, 'image requires %s, host supports only %s',
                text, host_state.supported_instances)
        return self._version_passes(host_state, props)

    def _version_passes(self, host_state, props):
        requirement = props.get('img_hv_requested_version')
        if not requirement or not host_state.hypervisor_version:
            return True
        try:
            if version_satisfied(requirement, host_state.hypervisor_version):
                return True
        except ValueError as error:
            return self.reject(
                host_state, 'image property img_hv_requested_version: %s',
                error)
        return self.reject(
            host_state, "hypervisor version %s does not satisfy the image's "
            "img_hv_requested_version '%s'",
            '.'.join(map(str, _host_version(host_state.hypervisor_version))),
            requirement)
