# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The conductor's name for :mod:`common.placement.move_allocations`.

NOTE: the module moved to ``common`` because the source compute of a live
migration also hands the migration's allocation back or drops it (a
service may only import another's rpcapi); the conductor's workflows keep
importing it from here.
"""

from common.placement.move_allocations import back_to_instance  # noqa
from common.placement.move_allocations import drop_migration  # noqa
from common.placement.move_allocations import INSTANCE_TYPE  # noqa
from common.placement.move_allocations import MIGRATION_TYPE  # noqa
from common.placement.move_allocations import MoveAllocationFailed  # noqa
from common.placement.move_allocations import read_hand_over  # noqa
from common.placement.move_allocations import to_migration  # noqa
from common.placement.move_allocations import VERSION  # noqa
