# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""tools/check-docs.py: which lines of a document it runs, which it skips."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _tool():
    spec = importlib.util.spec_from_file_location(
        'check_docs', os.path.join(ROOT, 'tools', 'check-docs.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DOC = """# Title

```shell
openstack server list   # a comment
bm cell_v2 create_cell --name c2 \\
    --transport-url none:///
# a whole-line comment
```

<!-- doc-check: skip: needs three hosts -->

```shell
systemctl restart berth-compute
```

<!-- doc-check: skip-lines "pip install": CI has it -->
```shell
pip install -e .[client]
openstack hypervisor list
```

```console
$ openstack server show vm1
| status | ACTIVE |
```

```
untagged
```

```ini
[DEFAULT]
```
"""


def test_blocks_commands_and_markers(tmp_path):
    tool = _tool()
    path = tmp_path / 'doc.md'
    path.write_text(DOC)
    blocks, errors = tool.parse(str(path))
    assert [b.language for b in blocks] == ['shell', 'shell', 'shell',
                                            'console', '', 'ini']
    assert len(errors) == 1 and 'untagged fence' in errors[0]
    assert tool.commands(blocks[0]) == [
        'openstack server list   # a comment',
        'bm cell_v2 create_cell --name c2 --transport-url none:///']
    assert blocks[0].markers == []
    assert blocks[1].markers == [(None, 'needs three hosts')]
    assert tool._skip_reason(blocks[1], 'systemctl restart x') == \
        'needs three hosts'
    assert tool._skip_reason(blocks[2], 'pip install -e .[client]') == \
        'CI has it'
    assert tool._skip_reason(blocks[2], 'openstack hypervisor list') is None
    assert tool.commands(blocks[3]) == ['openstack server show vm1']


def test_every_fence_of_the_docs_is_tagged():
    tool = _tool()
    paths = [os.path.join(ROOT, 'README.md')] + [
        os.path.join(ROOT, 'doc', name)
        for name in sorted(os.listdir(os.path.join(ROOT, 'doc')))
        if name.endswith('.md')]
    for path in paths:
        _blocks, errors = tool.parse(path)
        assert not errors, errors
