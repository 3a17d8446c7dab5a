# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Placeholder: being written."""

from services.placement import errors


def list_resource_classes(req):
    raise errors.PlacementError(status=501)


def create_resource_class(req):
    raise errors.PlacementError(status=501)


def get_resource_class(req):
    raise errors.PlacementError(status=501)


def update_resource_class(req):
    raise errors.PlacementError(status=501)


def delete_resource_class(req):
    raise errors.PlacementError(status=501)

