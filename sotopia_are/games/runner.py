"""`run_game`: a game played on the event kernel, with agents.

Modelled on the conversation runner (:func:`sotopia_are.social.run_episode`) and sharing
its parts: each ask of the play (:class:`GamePlay`) is one turn ``t`` at simulated time
``t * spec.turn_seconds``. What the players are told before it (roles, a phase's start,
tallies, eliminations, a refusal) is scheduled as ENV events at that time and run first;
then each asked agent is shown its view (derived from the log through the visibility
function) with its legal moves, and its move is logged as an AGENT ``move`` event seen by
the action's audience. So the log is the single source of truth and every view, transcript
and export follows from it.

An illegal move is refused: the reason is told to that agent alone (an ENV event, in the
log) and it is asked again, in the next turn, up to :data:`MAX_ASKS` asks; then the
episode fails naming the agent and the reason — never turned into an abstention. In a
simultaneous ask the legal moves wait until every player's move is legal, so nobody
sees another's choice first. An agent that raises, or returns something that is not a
:class:`GameMove`, fails the episode, as in a conversation.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sotopia_are import SotopiaAreError
from sotopia_are.messages import GameMove
from sotopia_are.simulation.ids import id_namespace
from sotopia_are.simulation.types import Event, EventType
from sotopia_are.social import (
    AgentFault,
    EpisodeResult,
    EpisodeSpec,
    EpisodeStatus,
    LiveEpisode,
    Sink,
    SocialAgent,
    agents_by_name,
    ask_agents,
)

from .legality import check_move
from .notice import Notice
from .outcome import GameOutcome
from .play import Ask, GamePlay
from .spec import rules_of

__all__ = ["MAX_ASKS", "GameResult", "run_game"]

MAX_ASKS = 3
"""How often an agent is asked for one move before an illegal answer fails the episode."""


@dataclass(frozen=True, eq=False)
class GameResult(EpisodeResult):
    """An episode result of a game: ``outcome`` is how it ended (None if it failed)."""

    outcome: GameOutcome | None = None


class _Failure(SotopiaAreError):
    """Ends a game as failed: ``agent`` (or None for the environment) and why."""

    def __init__(self, agent: str | None, reason: str) -> None:
        super().__init__(reason)
        self.agent = agent
        self.reason = reason


async def run_game(
    spec: EpisodeSpec,
    agents: Sequence[SocialAgent] | Mapping[str, SocialAgent],
    *,
    sinks: Sequence[Sink] = (),
) -> GameResult:
    """Play the game of ``spec`` (a spec with ``game`` set) with ``agents``, one per name
    in ``spec.agent_names``; ``sinks`` as in :func:`~sotopia_are.social.run_episode`.

    The result is ``complete`` with the game's :class:`GameOutcome` and its reason (e.g.
    ``"game over: village won"``, ``"cycle limit 4 reached"``), or ``failed`` naming the
    agent and why. ValueError if ``spec`` is not a game or the agents do not match its
    participants.
    """
    rules_of(spec)
    cast = agents_by_name(spec, agents)
    # The ENV events made here get their ids from this namespace: the same game, the
    # same ids, in every process.
    with id_namespace(f"game:{spec.episode_id}:{spec.seed}"):
        return await _GameRun(spec, cast, sinks).run()


class _GameRun:
    """One game being played: the kernel, the play and the turn counter."""

    def __init__(
        self, spec: EpisodeSpec, cast: Mapping[str, SocialAgent], sinks: Sequence[Sink]
    ) -> None:
        self.spec = spec
        self.cast = cast
        self.live = LiveEpisode(spec, sinks)
        self.play = GamePlay(spec)
        self.turn = 0
        self._refusals: list[Notice] = []

    async def run(self) -> GameResult:
        status, failed_agent, outcome = EpisodeStatus.COMPLETE, None, None
        steps = self.play.steps()
        try:
            try:
                ask = next(steps)
                while True:
                    moves = await self._answers(ask)
                    self._log(ask, moves)
                    ask = steps.send(moves)
            except StopIteration as stop:
                outcome = stop.value
                reason = outcome.reason
            self._tell()
        except _Failure as failure:
            status, failed_agent, reason = EpisodeStatus.FAILED, failure.agent, failure.reason
            outcome = None
        base = self.live.result(
            self.cast,
            status=status,
            reason=reason,
            failed_agent=failed_agent,
            turns_played=self.turn,
        )
        fields = {field.name: getattr(base, field.name) for field in dataclasses.fields(base)}
        result = GameResult(**fields, outcome=outcome)
        self.live.announce_end(result)
        return result

    def _tell(self) -> None:
        """Play what the players are to be told as ENV events at this turn's time, and
        everything else due by then; _Failure if an ENV event failed."""
        app = self.live.app
        events = []
        for notice in [*self.play.take_notices(), *self._refusals]:
            if notice.eliminated is not None:
                event = Event.from_function(
                    app.eliminate,
                    EventType.ENV,
                    participant=notice.eliminated,
                    content=notice.content,
                )
            else:
                perceivers = None if notice.perceivers is None else list(notice.perceivers)
                event = Event.from_function(
                    app.announce, EventType.ENV, content=notice.content, perceivers=perceivers
                )
            events.append(event.at_absolute_time(self.spec.time_of_turn(self.turn)))
        self._refusals.clear()
        self.live.env.schedule(events)
        if (reason := self.live.run_until_turn(self.turn)) is not None:
            raise _Failure(None, reason)

    async def _answers(self, ask: Ask) -> list[GameMove]:
        """Every asked player's legal move, in the ask's order (asking again after a
        refusal, one turn per asking)."""
        accepted: dict[str, GameMove] = {}
        refused: Counter[str] = Counter()
        pending = list(ask.actors)
        while pending:
            self._tell()
            views = self.live.views
            turns = [
                dataclasses.replace(
                    views.agent_turn(name, self.turn),
                    moves=ask.options_of(name),
                    phase=ask.phase,
                    available_actions=(),
                )
                for name in pending
            ]
            answers = await ask_agents(self.cast, turns)
            self.turn += 1
            if isinstance(answers, AgentFault):
                raise _Failure(answers.agent, answers.reason)
            again = []
            for name, answer in zip(pending, answers, strict=True):
                if not isinstance(answer, GameMove):
                    raise _Failure(name, f"{name} returned {answer!r}, not a GameMove")
                why = check_move(answer, ask.options_of(name))
                if why is None:
                    accepted[name] = answer
                    continue
                refused[name] += 1
                if refused[name] == MAX_ASKS:
                    raise _Failure(name, f"{name}'s move was refused {MAX_ASKS} times: {why}")
                self._refusals.append(
                    Notice(f"{name}, your move was refused: {why}. Choose again.", (name,))
                )
                again.append(name)
            pending = again
        return [accepted[name] for name in ask.actors]

    def _log(self, ask: Ask, moves: list[GameMove]) -> None:
        """Log each asked player's move as an AGENT event, in seat order."""
        for name, move in zip(ask.actors, moves, strict=True):
            to = self.play.audience(ask, name, move)
            try:
                self.live.app.move(
                    name,
                    move.move,
                    move.target,
                    move.amount,
                    move.argument,
                    None if to is None else list(to),
                )
            except ValueError as error:
                raise _Failure(name, f"{name}'s move was rejected: {error}") from None
