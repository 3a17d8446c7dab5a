# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Request helpers shared by the compute API tests."""

V = '/v2.1'


def make_flavor(client, name='m1', vcpus=1, ram=512, disk=1, specs=None,
                public=True):
    """Create a flavor (and its extra specs); return its id."""
    status, body, _ = client.post(V + '/flavors', {'flavor': {
        'name': name, 'vcpus': vcpus, 'ram': ram, 'disk': disk,
        'os-flavor-access:is_public': public}})
    assert status == 200, body
    flavor_id = body['flavor']['id']
    if specs:
        status, body, _ = client.post(
            V + '/flavors/%s/os-extra_specs' % flavor_id,
            {'extra_specs': specs})
        assert status == 200, body
    return flavor_id


def make_image(client, name='cirros', **properties):
    """Create an image in the built-in catalog; return its id."""
    body = {'name': name, 'disk_format': 'raw', 'container_format': 'bare'}
    body.update(properties)
    status, image, _ = client.post('/image/v2/images', body)
    assert status == 201, image
    return image['id']


def boot(client, flavor_id, image_id, name='vm', hints=None, token='admin',
         version='2.79', headers=None, **server):
    """POST /servers; return (status, body)."""
    body = {'server': dict(name=name, flavorRef=flavor_id, imageRef=image_id,
                           networks='none', **server)}
    if hints is not None:
        body['os:scheduler_hints'] = hints
    status, data, _ = client.post(V + '/servers', body, token=token,
                                  version=version, headers=headers)
    return status, data
