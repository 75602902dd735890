"""`ReplyKeys`: the keys of a model's JSON answer read leniently, for actions and moves alike.

A key is matched to one of the answer's ``fields`` ignoring case and everything but its
letters (``"Action_Type"``, ``"actionType"``), else through ``aliases``; unknown keys are
dropped, and an answer wrapped in one outer object is unwrapped. Each change is noted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ReplyKeys"]


@dataclass(frozen=True)
class ReplyKeys:
    """How to read the keys of one kind of answer: its ``fields`` (``main`` the one that
    marks an answer, e.g. ``"action_type"``), ``aliases`` by their letters, ``letters``
    the comparison form of a key and ``noun`` what the answer is called in notes."""

    fields: Sequence[str]
    main: str
    aliases: Mapping[str, str]
    letters: Callable[[str], str]
    noun: str
    # Every answer's keys are read, mostly the fields as written: their letters and the
    # fields themselves are read once, here.
    _field_letters: tuple[tuple[str, str], ...] = field(init=False, repr=False, compare=False)
    _exact: Mapping[str, str] = field(init=False, repr=False, compare=False)
    _as_written: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "_field_letters", tuple((self.letters(name), name) for name in self.fields)
        )
        object.__setattr__(self, "_exact", {name: self._read(name) for name in self.fields})
        object.__setattr__(
            self, "_as_written", frozenset(k for k, name in self._exact.items() if k == name)
        )

    def canonical(self, data: dict[str, Any], notes: list[str]) -> dict[str, Any]:
        """``data`` unwrapped and with its keys read as fields (see the module)."""
        if self._as_written.issuperset(data):
            # Every key is a field as written (most answers): nothing to unwrap (a lone
            # key is a field), read or drop, and the order stays.
            return dict(data)
        return self._canonical_keys(self._unwrapped(data, notes), notes)

    def _key(self, key: str) -> str:
        exact = self._exact.get(key)
        return exact if exact is not None else self._read(key)

    def _read(self, key: str) -> str:
        letters = self.letters(key)
        for field_letters, name in self._field_letters:
            if letters == field_letters:
                return name
        return self.aliases.get(letters, key)

    def _unwrapped(self, data: dict[str, Any], notes: list[str]) -> dict[str, Any]:
        if len(data) == 1:
            [(key, inner)] = data.items()
            if (
                isinstance(inner, dict)
                and self._key(key) not in self.fields
                and any(self._key(k) == self.main for k in inner)
            ):
                notes.append(f"unwrapped the {self.noun} from {key!r}")
                return inner
        return data

    def _canonical_keys(self, data: dict[str, Any], notes: list[str]) -> dict[str, Any]:
        read: dict[str, Any] = {}
        dropped: list[str] = []
        # Exact keys first, so {"to": ..., "To": ...} keeps the exact one.
        for key in sorted(data, key=lambda k: k not in self.fields):
            field = self._key(key)
            if field in self.fields and field not in read:
                if field != key:
                    notes.append(f"read key {key!r} as {field!r}")
                read[field] = data[key]
            else:
                dropped.append(key)
        if dropped:
            notes.append(f"ignored unknown keys {dropped}")
        return read
