# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Domain objects that travel over RPC: small dataclasses, JSON primitives.

No oslo.versionedobjects: each class converts itself with
``to_primitive()`` / ``from_primitive()`` (see :mod:`common.objects.base`),
and a payload's shape changes only through an RPC minor version.
"""
