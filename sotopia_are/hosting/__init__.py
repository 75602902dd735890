"""People in the loop: episodes and games hosted for participants in a browser.

:func:`host` serves ``sessions`` sessions of a spec: a person holds each named human seat
(a :class:`HumanSeat`, an agent whose turns the participant API answers), LLM agents or
agents of your own the others. The participant API (:func:`hosting_app`, documented in
docs/hosting.md) builds every response from that seat's own view (:func:`seat_view`), so
nothing a seat may not see leaves the server; a page on top of it lets a person play. Each
session is the one :class:`~sotopia_are.record.EpisodeRecord`, streamed to the store as it
is played, human seats labelled :data:`HUMAN`, timeouts recorded as timeouts
(:func:`is_timeout`).
"""

from .app import hosting_app
from .host import ExposedHostWarning, ahost, host, join_lines
from .seat import TIMEOUT_MOVE, TIMEOUT_NOTE, HumanSeat, SeatTimeout, is_timeout
from .seat_view import seat_view
from .session import HUMAN, HostedSession, SessionState
from .study import AgentsFor, HostedStudy, JoinLink
from .submission import SubmissionError, read_submission
from .tokens import Tokens

__all__ = [
    "HUMAN",
    "TIMEOUT_MOVE",
    "TIMEOUT_NOTE",
    "AgentsFor",
    "ExposedHostWarning",
    "HostedSession",
    "HostedStudy",
    "HumanSeat",
    "JoinLink",
    "SeatTimeout",
    "SessionState",
    "SubmissionError",
    "Tokens",
    "ahost",
    "host",
    "hosting_app",
    "is_timeout",
    "join_lines",
    "read_submission",
    "seat_view",
]
