"""`HostedSession`: one episode (or game) of a hosted study, with its people and agents.

A session waits until every human seat has arrived (group by arrival), then plays its
spec once — :func:`~sotopia_are.games.run_game` for a game,
:func:`~sotopia_are.social.run_episode` for a conversation — with its
:class:`HumanSeat` s and the agents of the other seats, streaming the one
:class:`~sotopia_are.record.EpisodeRecord` to the store as it is played (human seats
labelled :data:`HUMAN` in ``record.models``). The session keeps the conversation entries
as they happen (from the same log, through the same sink the runner feeds every sink),
and a version per seat that grows only with what THAT seat may perceive, so a client
waiting for changes learns nothing from the timing of what it may not see.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from pydantic import JsonValue

from sotopia_are.evaluation import LLMJudge
from sotopia_are.games import run_game
from sotopia_are.record import EpisodeRecord, record_of_result
from sotopia_are.social import (
    ConversationEntry,
    EntrySink,
    EpisodeResult,
    EpisodeSpec,
    EpisodeStatus,
    Sink,
    SocialAgent,
    run_episode,
)
from sotopia_are.storage import EpisodeRecorder, EpisodeStore
from sotopia_are.studies import arate, mark_stopped

from .seat import HumanSeat

__all__ = ["HUMAN", "Arrival", "HostedSession", "SessionState"]

_log = logging.getLogger(__name__)

HUMAN = "human"
"""The label of a human seat in ``record.models`` (a model seat's label is its model)."""


class SessionState(enum.StrEnum):
    """Where a session is: waiting for its people, playing, or over."""

    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"


@dataclass
class Arrival:
    """When a person took a seat, and the pseudonym of the participant id they came with
    (empty without one)."""

    at: float
    participant: str = ""


@dataclass
class HostedSession:
    """Session ``number`` of a study: ``spec`` played with ``seats`` (the people) and
    ``agents`` (every other seat), stored in ``store`` under ``tag``.

    ``labels`` name each seat's player for the record (:data:`HUMAN` or a model).
    """

    number: int
    spec: EpisodeSpec
    seats: dict[str, HumanSeat]
    agents: dict[str, SocialAgent]
    labels: dict[str, str]
    store: EpisodeStore | None = None
    tag: str = ""
    scenario_id: str = ""
    judge: LLMJudge | None = None
    clock: Callable[[], float] = time.time
    state: SessionState = SessionState.WAITING
    entries: list[ConversationEntry] = field(default_factory=list)
    arrivals: dict[str, Arrival] = field(default_factory=dict)
    record: EpisodeRecord | None = None
    error: str = ""
    started_at: float | None = None
    _versions: dict[str, int] = field(default_factory=dict)
    _tick: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None

    @property
    def episode_id(self) -> str:
        """The id of the session's episode (and of its record in the store)."""
        return self.spec.episode_id

    def version(self, seat: str) -> int:
        """How often what ``seat`` may perceive has changed so far."""
        return self._versions.get(seat, 0)

    def arrive(self, seat: str, participant: str = "") -> None:
        """Note that the person of ``seat`` is here (the first call counts; a later one
        adds a missing pseudonym); start the episode once every human seat has arrived."""
        arrival = self.arrivals.get(seat)
        if arrival is None:
            self.arrivals[seat] = Arrival(self.clock(), participant)
        elif participant and not arrival.participant:
            arrival.participant = participant
        if self.state is SessionState.WAITING and set(self.arrivals) >= set(self.seats):
            self.start()

    def start(self) -> None:
        """Play the episode in the background on the running event loop (once)."""
        if self._task is None:
            self.state = SessionState.RUNNING
            self.started_at = self.clock()
            self._task = asyncio.get_running_loop().create_task(self._play())
            self._bump(self.spec.agent_names)

    async def wait_for_change(self, seat: str, since: int, timeout: float) -> int:
        """Wait up to ``timeout`` seconds until ``seat``'s version passes ``since``;
        its version then."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.version(seat) <= since and (left := deadline - loop.time()) > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._tick.wait(), left)
        return self.version(seat)

    async def finished(self) -> EpisodeRecord | None:
        """Wait for the episode to end; its record (None if it failed before one was made)."""
        if self._task is not None:
            await asyncio.shield(self._task)
        return self.record

    async def stop(self) -> None:
        """Cancel a running episode (it is stored as interrupted)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def seat_changed(self, seat: HumanSeat) -> None:
        """The seat's turn began or ended: wake its waiting clients."""
        self._bump((seat.name,))

    def _on_entry(self, entry: ConversationEntry) -> None:
        self.entries.append(entry)
        self._bump(name for name in self.spec.agent_names if entry.visible_to(name))

    def _bump(self, seats: Iterable[str]) -> None:
        for name in seats:
            self._versions[name] = self._versions.get(name, 0) + 1
        # Wake every waiter once; each checks its own seat's version.
        self._tick.set()
        self._tick = asyncio.Event()

    def metadata(self) -> dict[str, JsonValue]:
        """What the store keeps beside the record: who held which seat and how long each
        person waited for the session to start (seconds), by pseudonym only."""
        start = self.started_at or self.clock()
        return {
            "hosting": {
                "session": self.number,
                "humans": {
                    name: {
                        "waited_s": round(start - arrival.at, 3),
                        "participant": arrival.participant,
                    }
                    for name, arrival in self.arrivals.items()
                },
            }
        }

    async def _play(self) -> None:
        spec = self.spec
        recorder = None
        if self.store is not None:
            recorder = EpisodeRecorder(self.store, tag=self.tag, models=self.labels)
            recorder.start(spec, scenario_id=self.scenario_id, metadata=self.metadata())
        sinks: list[Sink] = [EntrySink(spec.turn_seconds, self._on_entry)]
        if recorder is not None:
            sinks.insert(0, recorder)
        players: Mapping[str, SocialAgent] = {
            name: self.seats.get(name) or self.agents[name] for name in spec.agent_names
        }
        try:
            result: EpisodeResult
            if spec.game is not None:
                result = await run_game(spec, players, sinks=sinks)
            else:
                result = await run_episode(spec, players, sinks=sinks)
            record = record_of_result(
                result, models=self.labels, tag=self.tag, scenario_id=self.scenario_id
            )
            if self.judge is not None and record.status is EpisodeStatus.COMPLETE:
                record = await arate(record, self.judge, store=self.store, preflight=False)
            self.record = record
            self.state = SessionState.FINISHED
        except BaseException as error:
            self.state = SessionState.FAILED
            self.error = f"{type(error).__name__}: {error}"
            if isinstance(error, Exception):  # a bug or the store: the episode is stored as failed
                _log.exception("session %d (%s) failed", self.number, spec.episode_id)
            if self.store is not None:
                mark_stopped(self.store, spec.episode_id, error)
            if not isinstance(error, Exception):
                raise
        finally:
            self._bump(spec.agent_names)
