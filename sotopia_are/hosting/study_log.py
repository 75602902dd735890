"""`HostedStudyLog`: what the store keeps of a hosted study so a restarted server resumes it.

A study is named by its tag (the tag its sessions' episodes are stored under). The log
holds what the study plays (a fingerprint of the spec's content, the human seats, the
number of sessions), each session's episode id, and the DIGESTS of its tokens
(:func:`~sotopia_are.hosting.tokens.token_digest`) — never a token — so the links given
out before a restart still open the same seats after it. Everything that happened in a
session is in its episode (the one record); the log says only where to find it.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import JsonValue

from sotopia_are.storage import StoredModel
from sotopia_are.storage.fields import AS_JSON_TEXT
from sotopia_are.storage.redis_om_import import Field

from .tokens import SeatKey

__all__ = ["HostedStudyLog"]


class HostedStudyLog(StoredModel):
    """A hosted study (pk: its tag): ``fingerprint`` says what it plays (see
    :meth:`HostedStudy.fingerprint`), ``episodes[n - 1]`` is session ``n``'s episode id,
    ``seats`` maps each seat token's digest to ``{"session": n, "seat": name}``, and
    ``monitor``/``entry`` are the monitor's and the waiting room's token digests."""

    fingerprint: str = ""
    humans: Annotated[list[str], AS_JSON_TEXT] = Field(default_factory=list)
    episodes: Annotated[list[str], AS_JSON_TEXT] = Field(default_factory=list)
    scenario_id: str = ""
    monitor: str = ""
    entry: str = ""
    seats: Annotated[dict[str, dict[str, JsonValue]], AS_JSON_TEXT] = Field(default_factory=dict)
    created_at: float = 0.0

    class Meta:
        model_key_prefix = "HostedStudy"

    def seat_keys(self) -> dict[str, SeatKey]:
        """The seat tokens' digests and the seats they open."""
        keys = {}
        for digest, where in self.seats.items():
            session, seat = where.get("session"), where.get("seat")
            if not isinstance(session, int) or not isinstance(seat, str):
                raise ValueError(f"hosted study {self.pk!r}: a seat entry is unreadable: {where}")
            keys[digest] = SeatKey(session, seat)
        return keys

    @staticmethod
    def seat_entries(keys: dict[str, SeatKey]) -> dict[str, dict[str, JsonValue]]:
        """:meth:`seat_keys`'s inverse, as the log stores it."""
        return {digest: {"session": k.session, "seat": k.seat} for digest, k in keys.items()}
