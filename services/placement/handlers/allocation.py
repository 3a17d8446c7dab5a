# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Placeholder: being written."""

from services.placement import errors


def list_for_resource_provider(req):
    raise errors.PlacementError(status=501)


def set_allocations(req):
    raise errors.PlacementError(status=501)


def list_for_consumer(req):
    raise errors.PlacementError(status=501)


def set_allocations_for_consumer(req):
    raise errors.PlacementError(status=501)


def delete_allocations(req):
    raise errors.PlacementError(status=501)

