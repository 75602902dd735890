"""`StoredModel`: the base of every record, a redis-om ``HashModel`` that works without modules.

Hashes are the one redis-om record type plain Redis (no RedisJSON, no RediSearch) can
hold. :meth:`StoredModel.to_hash` writes exactly the mapping ``HashModel.save`` writes and
:meth:`StoredModel.from_hash` reads it back as ``HashModel.get`` does, so records written
by the store and by redis-om's own ``save`` are interchangeable. The store does its own
reads and writes (on its own connection, inside transactions with its index keys) because
redis-om binds a connection per class, which is process-wide state.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, Self, cast

from pydantic_core import to_jsonable_python

from sotopia_are.storage.keys import KEY_PREFIX
from sotopia_are.storage.redis_om_import import HashModel

__all__ = ["StoredModel"]

_PRIMARY_KEY_CHECKED: set[type] = set()
"""The record classes whose primary key redis-om has checked."""


class StoredModel(HashModel, abc.ABC):  # type: ignore[misc]  # redis-om is untyped
    """A record kept as one Redis hash; list and dict fields are JSON text (see ``fields``).

    ``pk`` is the primary key (a ULID unless given).
    """

    class Meta:
        global_key_prefix = KEY_PREFIX

    @classmethod
    def validate_primary_key(cls) -> None:
        """redis-om's check that the class has one primary key, made once per class:
        redis-om makes it for every instance built (half the time of building a record),
        and it reads only the class's fields."""
        if cls not in _PRIMARY_KEY_CHECKED:
            super().validate_primary_key()
            _PRIMARY_KEY_CHECKED.add(cls)

    @classmethod
    def redis_key(cls, pk: str) -> str:
        """The key of the hash holding the record ``pk``."""
        return str(cls.make_primary_key(pk))

    @classmethod
    def key_pattern(cls) -> str:
        """A ``SCAN MATCH`` pattern for every record of this model."""
        return cls.redis_key("*")

    def to_hash(self) -> dict[str, str | int | float]:
        """The record as hash fields: ``None`` fields are left out (as redis-om does)."""
        dumped: dict[str, Any] = self.model_dump(mode="json", exclude_none=True)
        return dumped

    def replace(self, **changes: Any) -> Self:
        """A validated copy with ``changes`` applied (``model_copy`` does not validate)."""
        # __dict__ holds the fields (as dict(self) gives them, 30 times faster).
        fields = {**self.__dict__, **(self.__pydantic_extra__ or {}), **changes}
        return cast(Self, type(self).model_validate(fields))

    @classmethod
    def from_hash(cls, pk: str, fields: Mapping[str, str]) -> Self:
        """The record read back from its hash fields."""
        return cast(Self, cls.model_validate({**fields, "pk": pk}))

    def to_document(self) -> dict[str, Any]:
        """The record as plain JSON data (lists and dicts as such, not as text)."""
        return {name: to_jsonable_python(getattr(self, name)) for name in type(self).model_fields}

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> Self:
        """The record from :meth:`to_document`'s output (unknown keys are an error)."""
        unknown = sorted(set(document) - set(cls.model_fields))
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown field(s) {', '.join(unknown)}")
        return cast(Self, cls.model_validate(dict(document)))
