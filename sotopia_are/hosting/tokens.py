"""`Tokens`: the unguessable secrets that admit a person to one seat, to the study's
waiting room, or to the monitor.

Each human seat of each session gets its own token (``secrets.token_urlsafe``, 256 bits);
the monitor and the waiting room (the entry link people arrive through, to be given a seat
in order of arrival) have their own. A token is the only credential: it travels in a
link's fragment (never sent to the server by a browser, so never in a request line or a
log) and then in each API request's ``Authorization: Bearer`` header. A seat's token
names that seat and nothing else, so it can never read another seat's view.

The server keeps only each token's SHA-256 digest (:func:`token_digest`) — and so does
the store, so that a restarted server still admits the links it gave out
(:mod:`sotopia_are.hosting.study_log`) while neither memory dumps of the table nor the
store hold a token. A 256-bit random secret needs no slow hash: its digest cannot be
inverted by guessing.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["SeatKey", "Tokens", "bearer_token", "token_digest"]

_BYTES = 32


def token_digest(token: str) -> str:
    """The hex SHA-256 of ``token``: what is kept of it."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class SeatKey:
    """Which seat a token opens: session ``session`` (its number), seat ``seat``."""

    session: int
    seat: str


class Tokens:
    """The tokens of one hosted study: one per human seat, the monitor's and the waiting
    room's. A fresh table makes new monitor and entry tokens; :meth:`restored` rebuilds a
    table from the digests a study log kept (its plain tokens are then unknown here)."""

    def __init__(self) -> None:
        self.monitor = secrets.token_urlsafe(_BYTES)
        self.entry = secrets.token_urlsafe(_BYTES)
        self.monitor_digest = token_digest(self.monitor)
        self.entry_digest = token_digest(self.entry)
        self._seats: dict[str, SeatKey] = {}
        self._issued: list[str] = []

    @classmethod
    def restored(cls, *, monitor: str, entry: str, seats: Mapping[str, SeatKey]) -> Tokens:
        """The table whose monitor, entry and seat tokens have the digests given."""
        tokens = cls()
        tokens.monitor = tokens.entry = ""
        tokens.monitor_digest, tokens.entry_digest = monitor, entry
        tokens._seats = dict(seats)
        return tokens

    def issue(self, key: SeatKey) -> str:
        """A new token for ``key``'s seat."""
        token = secrets.token_urlsafe(_BYTES)
        self._seats[token_digest(token)] = key
        self._issued.append(token)
        return token

    def seat(self, token: str | None) -> SeatKey | None:
        """The seat ``token`` opens, or None (an unknown token, the monitor's, none)."""
        return self._seats.get(token_digest(token)) if token else None

    def is_monitor(self, token: str | None) -> bool:
        """Whether ``token`` is the monitor's (compared in constant time)."""
        return token is not None and hmac.compare_digest(token_digest(token), self.monitor_digest)

    def is_entry(self, token: str | None) -> bool:
        """Whether ``token`` is the waiting room's (compared in constant time)."""
        return token is not None and hmac.compare_digest(token_digest(token), self.entry_digest)

    def seat_digests(self) -> dict[str, SeatKey]:
        """Every seat token's digest and the seat it opens (what a study log keeps)."""
        return dict(self._seats)

    def all(self) -> list[str]:
        """Every token this table knows in plain (for checks that none leaks): the
        monitor's and the entry's (unless restored), then the seats' issued here."""
        return [token for token in (self.monitor, self.entry) if token] + self._issued


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None
