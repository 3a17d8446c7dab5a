# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-all-in-one --demo``: a small cloud, a few servers, and why.

Through the compute API only (what a user with the ``openstack`` client
could do), the demo:

1. creates flavors (plain, ``io=fast`` / ``io=slow`` as in the
   aggregate extra-specs scenario of doc/behaviours.md A1, a dedicated-CPU
   one, and two that cannot be placed), an image with properties, and
   aggregates: ``io-fast`` and ``io-slow`` (metadata) over the two halves
   of the hosts, zones ``az1`` and ``az2`` over the even and odd ones;
2. boots a handful of servers and waits for each to be ACTIVE or ERROR;
3. prints where each landed and why: for an ACTIVE server the scheduler's
   own record of that decision (placement query, filters, weighers), for
   an ERROR one the fault the API shows (the NoValidHost explanation);
4. checks each outcome against what the layout allows, and fails (exit
   status 1) when any server did something else.

Re-running on the same state directory reuses the flavors, image and
aggregates it finds by name.
"""

import dataclasses
import json
import logging
import time

from services.allinone import client as client_mod

LOG = logging.getLogger(__name__)

WAIT_TIMEOUT = 120
POLL_INTERVAL = 0.3

# name: (vcpus, ram MiB, disk GiB, extra specs)
FLAVORS = {
    'demo.small': (1, 512, 1, {}),
    'demo.fast': (1, 512, 1, {'io': 'fast'}),
    'demo.slow': (1, 512, 1, {'io': 'slow'}),
    'demo.pinned': (2, 1024, 1, {'hw:cpu_policy': 'dedicated'}),
    'demo.io-medium': (1, 512, 1, {'io': 'medium'}),
    # NOTE: too big by disk, which quotas do not count (cores and RAM
    # would stop it at the API, before the scheduler has a say).
    'demo.huge': (1, 512, 4096, {}),
}
IMAGE = ('demo-cirros', {'hw_architecture': 'x86_64',
                         'os_distro': 'cirros'})


@dataclasses.dataclass
class Layout(object):
    """Which simulated host is in which aggregate and zone."""

    hosts: list

    @property
    def fast(self):
        """The first half of the hosts: aggregate io-fast (io=fast)."""
        return self.hosts[:(len(self.hosts) + 1) // 2]

    @property
    def slow(self):
        """The second half: aggregate io-slow (io=slow)."""
        return self.hosts[(len(self.hosts) + 1) // 2:]

    @property
    def az1(self):
        """Even hosts: zone az1."""
        return self.hosts[0::2]

    @property
    def az2(self):
        """Odd hosts: zone az2."""
        return self.hosts[1::2]

    def aggregates(self):
        """(name, hosts, metadata, zone) of every demo aggregate."""
        return [('io-fast', self.fast, {'io': 'fast'}, None),
                ('io-slow', self.slow, {'io': 'slow'}, None),
                ('az1', self.az1, {}, 'az1'),
                ('az2', self.az2, {}, 'az2')]


@dataclasses.dataclass
class Boot(object):
    """One demo server and what the layout allows for it."""

    name: str
    flavor: str
    allowed: list
    shows: str
    zone: str = None
    server_id: str = None
    server: dict = None

    @property
    def expected(self):
        """ACTIVE when some host may take it, else ERROR."""
        return 'ACTIVE' if self.allowed else 'ERROR'


def plan(layout):
    """The servers to boot on ``layout``; those with nowhere to go last."""
    boots = [
        Boot('web-1', 'demo.small', layout.hosts,
             'no constraint: the weighers spread it'),
        Boot('fast-1', 'demo.fast', layout.fast,
             'flavor io=fast: only hosts of aggregate io-fast'),
        Boot('slow-1', 'demo.slow', layout.slow,
             'flavor io=slow: only hosts of aggregate io-slow'),
        Boot('fast-az2', 'demo.fast',
             [h for h in layout.fast if h in layout.az2],
             'io=fast in zone az2: both constraints at once', zone='az2'),
        Boot('pinned-1', 'demo.pinned', layout.hosts,
             'hw:cpu_policy=dedicated: 2 pinned CPUs (PCPU)'),
        Boot('medium-1', 'demo.io-medium', [],
             'io=medium: no aggregate has it'),
        Boot('huge-1', 'demo.huge', [],
             '4096 GiB of disk: more than any host has'),
    ]
    # NOTE: a zone with no host at all is refused by the API itself (a
    # 400, not a scheduling failure); that boot is left out.
    return [b for b in boots if not b.zone or getattr(layout, b.zone)]


# --- seeding ---------------------------------------------------------------

def _flavor_ids(api):
    flavors = api.get('/flavors/detail?is_public=None')['flavors']
    return {f['name']: f['id'] for f in flavors}


def seed_flavors(api):
    """Create the demo flavors that are missing; returns name -> id."""
    ids = _flavor_ids(api)
    for name, (vcpus, ram, disk, specs) in FLAVORS.items():
        if name in ids:
            continue
        flavor = api.post('/flavors', {'flavor': {
            'name': name, 'vcpus': vcpus, 'ram': ram, 'disk': disk}})
        ids[name] = flavor['flavor']['id']
        if specs:
            api.post('/flavors/%s/os-extra_specs' % ids[name],
                     {'extra_specs': specs})
    return ids


def seed_image(api):
    """The demo image (created when missing); returns its id."""
    name, properties = IMAGE
    found = api.get('/v2/images?name=%s' % name, prefix='/image')
    if found.get('images'):
        return found['images'][0]['id']
    body = {'name': name, 'disk_format': 'raw', 'container_format': 'bare',
            'visibility': 'public'}
    body.update(properties)
    return api.post('/v2/images', body, prefix='/image')['id']


def seed_aggregates(api, layout):
    """Create the demo aggregates, their hosts, metadata and zones."""
    existing = {a['name']: a for a in
                api.get('/os-aggregates')['aggregates']}
    for name, hosts, metadata, zone in layout.aggregates():
        aggregate = existing.get(name)
        if aggregate is None:
            body = {'name': name}
            if zone:
                body['availability_zone'] = zone
            aggregate = api.post('/os-aggregates',
                                 {'aggregate': body})['aggregate']
        action = '/os-aggregates/%s/action' % aggregate['id']
        for host in hosts:
            if host not in (aggregate.get('hosts') or []):
                api.post(action, {'add_host': {'host': host}})
        if metadata and aggregate.get('metadata', {}) != metadata:
            api.post(action, {'set_metadata': {'metadata': metadata}})


# --- booting ---------------------------------------------------------------

def clear_previous(api, boots, timeout=WAIT_TIMEOUT):
    """Delete the servers an earlier demo left (same names); wait.

    NOTE: a re-run on the same state directory would otherwise run into
    the instance quota, and its report would mix two runs.
    """
    names = {item.name for item in boots}
    old = [s['id'] for s in api.get('/servers')['servers']
           if s['name'] in names]
    for server_id in old:
        api.request('DELETE', '/servers/%s' % server_id, expect=(204, 404))
    deadline = time.monotonic() + timeout
    while old and time.monotonic() < deadline:
        old = [i for i in old if _exists(api, i)]
        if old:
            time.sleep(POLL_INTERVAL)
    return not old


def _exists(api, server_id):
    try:
        api.get('/servers/%s' % server_id)
    except client_mod.APIError as exc:
        if exc.status == 404:
            return False
        raise
    return True


def boot(api, boots, flavor_ids, image_id):
    """POST each server (202: BUILD); the API answers at once."""
    for item in boots:
        server = {'name': item.name, 'flavorRef': flavor_ids[item.flavor],
                  'imageRef': image_id, 'networks': 'none'}
        if item.zone:
            server['availability_zone'] = item.zone
        item.server_id = api.post('/servers',
                                  {'server': server})['server']['id']


def wait(api, boots, timeout=WAIT_TIMEOUT):
    """Poll until every server is ACTIVE or ERROR (or time is up)."""
    deadline = time.monotonic() + timeout
    pending = list(boots)
    while pending and time.monotonic() < deadline:
        for item in list(pending):
            item.server = api.get('/servers/%s' % item.server_id)['server']
            if item.server['status'] in ('ACTIVE', 'ERROR'):
                pending.remove(item)
        if pending:
            time.sleep(POLL_INTERVAL)
    return not pending


# --- reporting -------------------------------------------------------------

def _weighers(entry):
    parts = sorted(entry.get('weighers', {}).items(),
                   key=lambda kv: -abs(kv[1]))
    return ', '.join('%s %+.2f' % (name, value)
                     for name, value in parts if value)


def explain_decision(explanation, conclude=True):
    """Lines telling why the scheduler decided as it did.

    :param conclude: end with the summary and the chosen host (a fault
        message already says the summary).
    """
    if not explanation:
        return ['(no record of the decision)']
    lines = []
    if explanation.get('placement_query'):
        lines.append('placement: %d candidate(s) for %s' % (
            explanation.get('candidates', 0),
            explanation['placement_query']))
    for item in explanation.get('filters', []):
        removed = item.get('removed') or []
        if removed:
            lines.append('%s removed %s' % (
                item['filter'], ', '.join(h for h, _n in removed)))
    for key, item in sorted(explanation.get('rejections', {}).items()):
        lines.append('  %s: %s' % (key.split(':')[0], item['reason']))
    for entry in explanation.get('weighed', [])[:3]:
        lines.append('weighed %s: %.3f (%s)' % (
            entry['host'], entry['weight'], _weighers(entry) or 'all equal'))
    if not conclude:
        return lines
    selected = [host for host, _node in explanation.get('selected') or []]
    lines.append('=> %s%s' % (explanation.get('summary', ''),
                              '; ' + _chosen(explanation, selected)
                              if selected else ''))
    return lines


def _chosen(explanation, selected):
    """``chose X``, saying so when X won a random draw among equals."""
    tied = explanation.get('tied_best') or 0
    weighed = explanation.get('weighed') or []
    best = [entry['host'] for entry in weighed
            if entry['weight'] == weighed[0]['weight']]
    if tied > 1 and (selected[0] in best or tied > len(weighed)):
        return ('chose %s, at random among %d hosts of equal weight'
                % (', '.join(selected), tied))
    return 'chose ' + ', '.join(selected)


def _fault_details(fault):
    details = fault.get('details')
    if isinstance(details, str):
        try:
            return json.loads(details)
        except ValueError:
            return {'summary': details.strip().splitlines()[-1:]}
    return details or {}


def report(boots, journal, out):
    """Print each server's outcome and reason; returns True if all fit."""
    ok = True
    for item in boots:
        server = item.server or {}
        status = server.get('status', 'UNKNOWN')
        host = server.get('OS-EXT-SRV-ATTR:host') or '-'
        zone = server.get('OS-EXT-AZ:availability_zone') or '-'
        good = status == item.expected and (
            status == 'ERROR' or host in item.allowed)
        ok = ok and good
        out('%-9s %-7s host %-10s zone %-5s %s' % (
            item.name, status, host, zone,
            'as expected' if good else 'UNEXPECTED (expected %s on %s)'
            % (item.expected, item.allowed or 'no host')))
        out('    %s (flavor %s%s)' % (item.shows, item.flavor,
                                      ', zone ' + item.zone
                                      if item.zone else ''))
        if status == 'ERROR':
            fault = server.get('fault') or {}
            out('    fault: %s' % fault.get('message', '(none)'))
            lines = explain_decision(_fault_details(fault), conclude=False)
        else:
            lines = explain_decision(journal.get(item.server_id))
        for line in lines:
            out('    ' + line)
        out('')
    return ok


def run(api_url, hosts, journal, out=print):
    """Seed, boot, wait, report; returns True when everything was right.

    :param api_url: the compute API's base URL.
    :param hosts: the simulated compute host names.
    :param journal: the scheduler's :class:`DecisionJournal`.
    :param out: where the report goes, line by line.
    """
    api = client_mod.ComputeClient(api_url)
    layout = Layout(sorted(hosts))
    out('Demo: %d hosts; io-fast %s, io-slow %s; az1 %s, az2 %s' % (
        len(layout.hosts), layout.fast, layout.slow, layout.az1,
        layout.az2))
    flavor_ids = seed_flavors(api)
    image_id = seed_image(api)
    seed_aggregates(api, layout)
    boots = plan(layout)
    clear_previous(api, boots)
    started = time.monotonic()
    boot(api, boots, flavor_ids, image_id)
    finished = wait(api, boots)
    out('%d servers booted in %.1fs\n'
        % (len(boots), time.monotonic() - started))
    ok = report(boots, journal, out) and finished
    out('Demo %s.' % ('succeeded: every server went where the layout '
                      'allows' if ok else 'FAILED (see UNEXPECTED above)'))
    return ok
