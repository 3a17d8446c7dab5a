# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Placement as its callers see it: one client, one microversion list.

Every Berth service that talks to placement (the scheduler's queries and
claims, the compute agent's provider reports, the conductor's allocation
moves and audits, the manage tool) goes through this package.
"""
