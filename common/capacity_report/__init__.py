# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The capacity report: one self-contained HTML page with pictures.

:mod:`data` holds the plain data of a report and collects it (placement's
inventories and usages, the api database's aggregates and zones; the
headroom rows come from whoever calls it), :mod:`plots` draws the
pictures with matplotlib as inline SVG, :mod:`page` writes the page.
``berth-manage capacity report --html FILE`` and berth-api's
``/os-berth-capacity/report`` serve the same page (doc/operations.md).
"""
