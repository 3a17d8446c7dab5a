# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The placement microversions Berth's callers ask for, and why.

Every placement request names one of these; no caller writes a version
number of its own (a unit test scans the callers for one). Each caller
asks for what its calls need and no more, and a version is never raised
without a reason written here: a newer microversion can change what a
call requires or answers (1.38 makes ``consumer_type`` mandatory on
``PUT /allocations``, for one). The numbers are placement's; see
``placement/microversion.py``'s list for what each version added, and a
guard test keeps every entry here within the range Berth's placement
serves.
"""

# --- the scheduler (services/scheduler/client/placement.py) ------------------

#: ``GET /allocation_candidates``. 1.39 for ``required=in:`` (any of these
#: traits), 1.36 for ``same_subtree`` and resourceless request groups,
#: 1.35 for ``root_required``. (Since 1.34 the answer also carries
#: ``mappings``, which the scheduler does not use.)
CANDIDATES = '1.39'

#: The scheduler's claims and their rollbacks (``PUT`` and ``DELETE
#: /allocations/{consumer}``). 1.38 to write ``consumer_type``, 1.28 for
#: the consumer generation that makes a claim on a consumer someone else
#: wrote fail instead of overwriting it. A claim sends back only the
#: candidate's ``allocations``, never its ``mappings``.
SCHEDULER_CLAIM = '1.38'

#: The scheduler's reads on a failed request only, to name why placement
#: found no candidate (services/scheduler/diagnosis.py): a provider's
#: traits, inventories and usages, and ``GET /resource_providers?resources=``
#: (1.4) for whether any provider could take an amount at all. 1.14, the
#: nested-provider version the rest of the scheduler's reads assume.
SCHEDULER_DIAGNOSIS = '1.14'

# --- the compute agent (services/compute/report.py) --------------------------

#: Every call of the agent's provider tree report: 1.37 to re-parent or
#: rename a provider (``PUT /resource_providers/{uuid}``), 1.23 for the
#: ``placement.concurrent_update`` error code its retries look for, 1.20
#: so that ``POST /resource_providers`` answers with the new provider and
#: its generation, 1.14 for ``in_tree`` and the root and parent uuids of
#: nested providers (NUMA cells, GPUs). The agent reads and writes its
#: trees at placement's newest version, 1.39, so that what it reads
#: (inventories, traits) is what the scheduler's queries see.
PROVIDER_TREE = '1.39'

# --- the conductor and berth-manage (services/conductor/allocations.py) ------

#: The conductor's allocation reads and writes (reschedule claims, heal
#: and audit repairs, removals). 1.28 for consumer generations (a write
#: carries the one it read, so that it never overwrites a concurrent
#: move), 1.12 for allocations keyed by provider. Kept below 1.38, where
#: ``PUT /allocations`` would require a ``consumer_type`` these writes do
#: not send.
CONDUCTOR_ALLOCATIONS = '1.36'

#: A move hands the source allocation from the instance's consumer to the
#: migration's, and back on a revert, in one ``POST /allocations`` (1.13),
#: with consumer generations (1.28) and the migration's consumer type
#: (1.38), so that audits and usages by consumer type tell the two apart.
MOVE_ALLOCATIONS = '1.38'

#: Provider listings and per-provider allocation reads of the allocation
#: audit (services/conductor/allocation_audit.py) and the all-in-one
#: launcher's readiness check: 1.14 for ``root_provider_uuid``, which the
#: audit groups providers by.
PROVIDER_LISTING = '1.14'

# --- the compute API (services/api/placement_sync.py) and berth-manage -------

#: Provider aggregates, read and written by the API's host-aggregate
#: mirror and ``berth-manage placement sync_aggregates``: 1.19 so that
#: both carry the provider generation and a concurrent change is a 409,
#: not a lost update.
AGGREGATES = '1.19'

#: Provider traits written by the API (``COMPUTE_STATUS_DISABLED`` when a
#: compute service is disabled): the first version with traits, 1.6,
#: whose ``PUT`` already carries the provider generation.
TRAITS = '1.6'

#: The API's ``DELETE /resource_providers/{uuid}`` when a compute service
#: is deleted. The call is the same at every version (409 while the
#: provider has allocations or children); 1.14, the first version with
#: nested providers, is the version the API has always sent.
PROVIDER_DELETE = '1.14'

#: The API's ``DELETE /allocations/{consumer}`` of a local delete (a
#: server whose host is down). The call is the same at every version;
#: 1.28, the first with consumer generations, is the version the API has
#: always sent.
LOCAL_DELETE = '1.28'


def used():
    """{name: version} of every microversion above (the guard tests')."""
    return {name: value for name, value in globals().items()
            if name.isupper() and isinstance(value, str)}
