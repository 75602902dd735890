"""`HumanSeat`: a seat of an episode held by a person, acting through the participant API.

A seat is an agent like any other (:class:`~sotopia_are.social.SocialAgent`): the runner
hands it its :class:`~sotopia_are.social.AgentTurn` — already exactly that seat's view —
and waits for its action. The seat publishes the turn (:attr:`HumanSeat.turn`), and
:meth:`HumanSeat.submit` (called by the API) answers it. A turn not answered within
``turn_timeout`` seconds is a TIMEOUT, and it is recorded as one, never as the person's
choice:

* in a conversation the seat does nothing, with the argument :data:`TIMEOUT_NOTE` — an
  action ``none`` never has an argument otherwise, so the log says it was a timeout (the
  transcripts leave "doing nothing" out, as always);
* in a game there is no default move in the rules, so the seat answers with the move
  :data:`TIMEOUT_MOVE`, which no game offers: the game refuses it in the log (an ENV
  event to that seat alone naming ``timed-out``) and asks the seat again; after
  :data:`~sotopia_are.games.MAX_ASKS` such asks the game fails naming the seat.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sotopia_are.messages import AgentAction, GameMove
from sotopia_are.social import AgentTurn, CallRecord

__all__ = ["TIMEOUT_MOVE", "TIMEOUT_NOTE", "HumanSeat", "SeatTimeout", "is_timeout"]

TIMEOUT_NOTE = "[timed out: no action within the time limit]"
"""The argument of the ``none`` action a conversation seat records on a timeout."""

TIMEOUT_MOVE = "timed-out"
"""The move a game seat answers with on a timeout (refused: no game offers it)."""


def is_timeout(action: AgentAction | GameMove) -> bool:
    """Whether ``action`` is a seat's timeout, not a choice (see the module)."""
    if isinstance(action, GameMove):
        return action.move == TIMEOUT_MOVE
    return action.action_type == "none" and action.argument == TIMEOUT_NOTE


@dataclass(frozen=True)
class SeatTimeout:
    """A turn the person let pass: the turn's number and phase, and the limit it had."""

    turn_number: int
    phase: str
    seconds: float


class HumanSeat:
    """The seat ``name`` of an episode, played by a person through the API.

    ``turn_timeout`` is how long a turn waits for the person (seconds); ``on_change`` is
    called whenever the seat's turn starts or ends (the session wakes waiting clients).
    Only the event loop the episode runs on may call its methods.
    """

    def __init__(
        self,
        name: str,
        *,
        turn_timeout: float,
        on_change: Callable[[HumanSeat], None] = lambda seat: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if turn_timeout <= 0:
            raise ValueError(f"turn_timeout must be positive, not {turn_timeout}")
        self._name = name
        self.turn_timeout = turn_timeout
        self._on_change = on_change
        self._clock = clock
        self._turn: AgentTurn | None = None
        self._deadline = 0.0
        self._answer: asyncio.Future[AgentAction | GameMove] | None = None
        self.timeouts: list[SeatTimeout] = []
        self.actions_taken = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def turn(self) -> AgentTurn | None:
        """The turn the person must answer now, or None when it is not the seat's turn
        (or it was answered and the episode has not taken the answer yet)."""
        if self._answer is None or self._answer.done():
            return None
        return self._turn

    def time_left(self) -> float | None:
        """Seconds until the current turn times out (None when it is not the seat's turn)."""
        if self.turn is None:
            return None
        return max(0.0, self._deadline - self._clock())

    async def act(self, turn: AgentTurn) -> AgentAction | GameMove:
        """Publish ``turn`` and wait for :meth:`submit`; on timeout, the timeout's
        default (see the module)."""
        answer: asyncio.Future[AgentAction | GameMove] = asyncio.get_running_loop().create_future()
        self._turn, self._answer = turn, answer
        self._deadline = self._clock() + self.turn_timeout
        self._on_change(self)
        try:
            return await asyncio.wait_for(answer, self.turn_timeout)
        except TimeoutError:
            self.timeouts.append(SeatTimeout(turn.turn_number, turn.phase, self.turn_timeout))
            if turn.moves:
                return GameMove(move=TIMEOUT_MOVE)
            return AgentAction(action_type="none", argument=TIMEOUT_NOTE)
        finally:
            self._turn, self._answer = None, None
            self._on_change(self)

    def submit(self, action: AgentAction | GameMove) -> int:
        """Answer the current turn with ``action`` (already checked against the turn's
        legal actions); the turn's number. RuntimeError when it is not the seat's turn."""
        turn, answer = self.turn, self._answer
        if turn is None or answer is None:
            raise RuntimeError(f"it is not {self._name}'s turn")
        answer.set_result(action)
        self.actions_taken += 1
        return turn.turn_number

    def call_records(self) -> Sequence[CallRecord]:
        """A person makes no model calls."""
        return ()
