"""`Tokens`: the unguessable secrets that admit a person to one seat, or to the monitor.

Each human seat of each session gets its own token (``secrets.token_urlsafe``, 256 bits);
the monitor has a separate one. A token is the only credential: it travels in the join
URL's fragment (never sent to the server by a browser, so never in a request line or a
log) and then in each API request's ``Authorization: Bearer`` header. A seat's token
names that seat and nothing else, so it can never read another seat's view.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass

__all__ = ["SeatKey", "Tokens", "bearer_token"]

_BYTES = 32


@dataclass(frozen=True)
class SeatKey:
    """Which seat a token opens: session ``session`` (its number), seat ``seat``."""

    session: int
    seat: str


class Tokens:
    """The tokens of one hosted study: one per human seat, and the monitor's."""

    def __init__(self) -> None:
        self.monitor = secrets.token_urlsafe(_BYTES)
        self._seats: dict[str, SeatKey] = {}

    def issue(self, key: SeatKey) -> str:
        """A new token for ``key``'s seat."""
        token = secrets.token_urlsafe(_BYTES)
        self._seats[token] = key
        return token

    def seat(self, token: str | None) -> SeatKey | None:
        """The seat ``token`` opens, or None (an unknown token, the monitor's, none)."""
        return self._seats.get(token) if token else None

    def is_monitor(self, token: str | None) -> bool:
        """Whether ``token`` is the monitor's (compared in constant time)."""
        return token is not None and hmac.compare_digest(token.encode(), self.monitor.encode())

    def all(self) -> list[str]:
        """Every token issued, the monitor's first (for checks that none leaks)."""
        return [self.monitor, *self._seats]


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None
