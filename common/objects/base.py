# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The primitive conversion every Berth domain object shares."""

import dataclasses
import functools
import typing


# NOTE: most values are these; they skip the dataclass and container
# checks (every RPC message converts hundreds of them).
_SCALARS = (str, int, float, type(None))


def _to_primitive(value):
    if isinstance(value, _SCALARS):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return value.to_primitive()
    if isinstance(value, dict):
        return {k: _to_primitive(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_to_primitive(v) for v in value]
    return value


def _nested_class(annotation):
    """The PrimitiveObject class an annotation names, or None."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union:
        for arg in typing.get_args(annotation):
            found = _nested_class(arg)
            if found is not None:
                return found
        return None
    if isinstance(annotation, type) and issubclass(annotation,
                                                   PrimitiveObject):
        return annotation
    return None


@functools.lru_cache(maxsize=None)
def _nested_fields(cls):
    """Per field of ``cls``: (name, nested PrimitiveObject class or None).

    NOTE: cached per class: resolving type hints costs more than the
    conversion itself, and lists of hundreds of instances go through here.
    """
    hints = typing.get_type_hints(cls)
    return tuple((field.name, _nested_class(hints.get(field.name)))
                 for field in dataclasses.fields(cls))


@functools.lru_cache(maxsize=None)
def _field_names(cls):
    """The field names of dataclass ``cls``, cached as those of
    :func:`_nested_fields`.
    """
    return tuple(field.name for field in dataclasses.fields(cls))


class PrimitiveObject(object):
    """Mixin for dataclasses: lossless conversion to and from JSON values.

    Nested objects are converted when a field is annotated with a
    PrimitiveObject subclass (optionally ``Optional[...]``); unknown keys in
    a primitive are ignored so that a newer sender does not break an older
    receiver within the same major RPC version.
    """

    def to_primitive(self):
        """A dict of JSON-serialisable values."""
        return {name: _to_primitive(getattr(self, name))
                for name in _field_names(type(self))}

    @classmethod
    def from_primitive(cls, primitive):
        """Rebuild an object from :meth:`to_primitive`'s output."""
        if primitive is None:
            return None
        values = {}
        for name, nested in _nested_fields(cls):
            if name not in primitive:
                continue
            value = primitive[name]
            if nested is not None and value is not None:
                value = nested.from_primitive(value)
            values[name] = value
        return cls(**values)
