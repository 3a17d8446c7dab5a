# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-placement-api`` as users run it: a process, a socket, a database.

Each test starts the real console script on a fresh database of each
backend and talks HTTP to it, as a client or a deployment tool would.
"""

import concurrent.futures
import random
import threading
import uuid

import httpx

from tests.functional.placement import conftest

HEADERS = conftest.ADMIN_HEADERS
THREADS = 8
ROUNDS = 6


def _create_provider(client, name=None):
    """POST a provider; returns its uuid."""
    rp_uuid = str(uuid.uuid4())
    resp = client.post('/resource_providers', headers=HEADERS,
                       json={'name': name or 'rp-' + rp_uuid,
                             'uuid': rp_uuid})
    assert resp.status_code == 200, resp.text
    return rp_uuid


def test_serves_and_stops_cleanly(any_backend, placement_server):
    """GET /, create, list and delete a provider; SIGTERM exits 0."""
    server = placement_server(any_backend)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        root = client.get('/')
        assert root.status_code == 200
        version = root.json()['versions'][0]
        assert version['min_version'] == '1.0'
        assert version['max_version'] == '1.39'

        name = 'functional-%s' % any_backend
        rp_uuid = _create_provider(client, name)
        listing = client.get('/resource_providers', headers=HEADERS,
                             params={'name': name})
        assert listing.status_code == 200, listing.text
        providers = listing.json()['resource_providers']
        assert [p['uuid'] for p in providers] == [rp_uuid]
        assert providers[0]['generation'] == 0

        # NOTE: a root provider references itself (root_provider_id);
        # InnoDB checks that per row, so this is a MariaDB-specific trap.
        deleted = client.delete('/resource_providers/' + rp_uuid,
                                headers=HEADERS)
        assert deleted.status_code == 204, deleted.text
        gone = client.get('/resource_providers/' + rp_uuid, headers=HEADERS)
        assert gone.status_code == 404
    assert server.stop() == 0, server.log_tail()


def _hammer(url, rp_uuid, path, body_for, barrier):
    """One client: read the generation, PUT with it, ROUNDS times.

    :returns: the status codes it got.
    """
    statuses = []
    with httpx.Client(base_url=url, timeout=60) as client:
        barrier.wait()
        for _ in range(ROUNDS):
            current = client.get(path, headers=HEADERS)
            assert current.status_code == 200, current.text
            generation = current.json()['resource_provider_generation']
            resp = client.put(path, headers=HEADERS,
                              json=body_for(generation))
            statuses.append(resp.status_code)
    return statuses


def _race(server, rp_uuid, path, body_for):
    """THREADS clients at once; returns (statuses, final generation)."""
    barrier = threading.Barrier(THREADS)
    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        futures = [pool.submit(_hammer, server.url, rp_uuid, path,
                               body_for, barrier)
                   for _ in range(THREADS)]
        statuses = [s for f in futures for s in f.result()]
    resp = httpx.get(server.url + '/resource_providers/' + rp_uuid,
                     headers=HEADERS, timeout=30)
    assert resp.status_code == 200, resp.text
    return statuses, resp.json()['generation']


def _check_race(server, statuses, start_generation, final_generation):
    """Only 200 or 409, and each 200 bumped the generation exactly once."""
    unexpected = sorted(set(statuses) - {200, 409})
    assert not unexpected, 'statuses %s; server log:\n%s' % (
        unexpected, server.log_tail())
    successes = statuses.count(200)
    assert successes >= 1
    assert final_generation == start_generation + successes


def test_concurrent_trait_updates(any_backend, placement_server):
    """8 clients replace one provider's traits with generation checks."""
    server = placement_server(any_backend)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        rp_uuid = _create_provider(client)
    choices = ['HW_CPU_X86_AVX', 'HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE',
               'STORAGE_DISK_SSD', 'COMPUTE_VOLUME_MULTI_ATTACH']

    def body_for(generation):
        return {'resource_provider_generation': generation,
                'traits': random.sample(choices, random.randint(0, 3))}

    statuses, final = _race(server, rp_uuid,
                            '/resource_providers/%s/traits' % rp_uuid,
                            body_for)
    _check_race(server, statuses, 0, final)


def test_concurrent_inventory_updates(any_backend, placement_server):
    """8 clients replace one provider's inventory with generation checks."""
    server = placement_server(any_backend)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        rp_uuid = _create_provider(client)

    def body_for(generation):
        return {'resource_provider_generation': generation,
                'inventories': {
                    'VCPU': {'total': random.randint(1, 64)},
                    'MEMORY_MB': {'total': random.randint(512, 65536)}}}

    statuses, final = _race(server, rp_uuid,
                            '/resource_providers/%s/inventories' % rp_uuid,
                            body_for)
    _check_race(server, statuses, 0, final)
