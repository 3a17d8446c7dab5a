# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Isolated emulator threads: the policy, the extra pCPU and its fit.

``hw:emulator_threads_policy=isolate`` (or the image's
``hw_emulator_threads_policy``) with dedicated CPUs gives the guest's
emulator threads one host pCPU of their own, on the host node of guest
node 0; the fit holds it like a pinned CPU so no other guest gets it.
"""

import pytest

from common.numa import constraints
from common.numa import exception
from common.numa import fit
from common.numa import topology
from common.objects import image as image_obj
from tests.unit.numa import fakes

DEDICATED = {'hw:cpu_policy': 'dedicated'}
ISOLATE = dict(DEDICATED, **{'hw:emulator_threads_policy': 'isolate'})


def _get(vcpus=2, specs=None, props=None):
    flavor = fakes.flavor(vcpus, 1024, **(specs or {}))
    image = image_obj.ImageMeta(id='i', properties=dict(props or {}))
    return constraints.get_constraints(flavor, image)


@pytest.mark.parametrize('specs, props, expected', [
    (ISOLATE, {}, 'isolate'),
    (dict(DEDICATED, **{'hw:emulator_threads_policy': 'share'}), {},
     'share'),
    (DEDICATED, {'hw_emulator_threads_policy': 'isolate'}, 'isolate'),
    # NOTE: the flavor is the administrator's and wins over the image.
    (dict(DEDICATED, **{'hw:emulator_threads_policy': 'share'}),
     {'hw_emulator_threads_policy': 'isolate'}, 'share'),
    (DEDICATED, {}, None),
    ({'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '^0',
      'hw:emulator_threads_policy': 'isolate'}, {}, 'isolate'),
])
def test_policy_precedence(specs, props, expected):
    result = _get(specs=specs, props=props)
    assert result.emulator_threads_policy == expected
    assert result.emulator_threads_isolated is (expected == 'isolate')
    # NOTE: it survives the request spec's JSON round trip.
    again = topology.InstanceTopology.from_primitive(result.to_primitive())
    assert again.emulator_threads_policy == expected


@pytest.mark.parametrize('specs, props, key', [
    ({'hw:emulator_threads_policy': 'isolate'}, {},
     'hw:emulator_threads_policy'),
    ({'hw:cpu_policy': 'shared', 'hw:emulator_threads_policy': 'isolate'},
     {}, 'hw:emulator_threads_policy'),
    ({'hw:numa_nodes': '1'}, {'hw_emulator_threads_policy': 'isolate'},
     'hw_emulator_threads_policy'),
])
def test_isolate_without_dedicated_cpus_is_refused(specs, props, key):
    with pytest.raises(
            exception.BadRequirementEmulatorThreadsPolicy) as caught:
        _get(specs=specs, props=props)
    message = str(caught.value)
    assert message.startswith('An isolated CPU emulator threads option '
                              'requires a dedicated CPU policy option')
    assert '%s=isolate' % key in message and 'shared' in message


def test_unknown_policy_is_refused():
    with pytest.raises(exception.InvalidEmulatorThreadsPolicy) as caught:
        _get(specs=DEDICATED, props={'hw_emulator_threads_policy': 'own'})
    assert "hw_emulator_threads_policy 'own'" in str(caught.value)


def test_share_without_dedicated_is_fine():
    assert _get(specs={'hw:emulator_threads_policy': 'share'}) is None


def test_fit_holds_one_more_pcpu_on_guest_node_0():
    host = topology.HostTopology(cells=[
        fakes.host_cell(0, range(4), 4096), fakes.host_cell(1, range(4, 8),
                                                            4096)])
    fitted = fit.fit_instance_to_host(host, _get(specs=ISOLATE))
    cell, = fitted.cells
    assert cell.cpu_pinning == {0: 0, 1: 1}
    assert cell.emulator_pcpus == {2}
    assert cell.held_pcpus == {0, 1, 2}
    used = fit.apply_usage(host, fitted)
    assert used.cell(0).pinned_cpus == {0, 1, 2}
    # NOTE: one pCPU is left on node 0, not enough for another guest of
    # two vCPUs there; it lands on node 1 instead.
    second = fit.fit_instance_to_host(used, _get(specs=ISOLATE))
    assert second.cells[0].id == 1
    assert second.cells[0].emulator_pcpus == {6}
    assert fit.release_usage(used, fitted).cell(0).pinned_cpus == set()


def test_no_spare_pcpu_for_the_emulator_means_no_fit():
    host = topology.HostTopology(cells=[fakes.host_cell(0, range(2), 4096)])
    assert fit.fit_instance_to_host(host, _get(specs=DEDICATED)) is not None
    assert fit.fit_instance_to_host(host, _get(specs=ISOLATE)) is None


def test_multi_node_guest_holds_the_emulator_pcpu_on_node_0_only():
    host = topology.HostTopology(cells=[
        fakes.host_cell(0, range(4), 4096), fakes.host_cell(1, range(4, 8),
                                                            4096)])
    fitted = fit.fit_instance_to_host(host, _get(
        vcpus=4, specs=dict(ISOLATE, **{'hw:numa_nodes': '2'})))
    assert [c.emulator_pcpus for c in fitted.cells] == [{2}, set()]


def test_thread_isolate_keeps_the_emulator_off_held_siblings():
    host = topology.HostTopology(cells=[fakes.host_cell(
        0, range(8), 4096, siblings=[(0, 4), (1, 5), (2, 6), (3, 7)])])
    fitted = fit.fit_instance_to_host(host, _get(specs=dict(
        ISOLATE, **{'hw:cpu_thread_policy': 'isolate'})))
    cell, = fitted.cells
    assert set(cell.cpu_pinning.values()) == {0, 1}
    assert cell.cpuset_reserved == {4, 5}
    assert cell.emulator_pcpus == {2}
