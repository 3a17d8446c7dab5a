# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Image pre-caching on the hosts of an aggregate, in ``[image_cache]``
as in Nova.
"""

from oslo_config import cfg

image_cache_group = cfg.OptGroup('image_cache', title='Image cache options')

image_cache_opts = [
    cfg.IntOpt('precache_concurrency', default=1, min=1, help="""
How many compute hosts the conductor asks at once to pre-cache images
(``POST /os-aggregates/{id}/images``, compute API 2.81).

Each host downloads the images into its cache; a larger value finishes a
large aggregate sooner but loads the image service with that many
downloads at once.

Possible values:

* A positive number of hosts (1, the default, asks one host at a time).
"""),
]


def register_opts(conf):
    """Register the [image_cache] options."""
    conf.register_group(image_cache_group)
    conf.register_opts(image_cache_opts, group=image_cache_group)


def list_opts():
    """Options for the sample config."""
    return [(image_cache_group.name, image_cache_opts)]
