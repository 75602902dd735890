"""`HostedSession`: one episode (or game) of a hosted study, with its people and agents.

A session waits until every human seat has arrived (group by arrival) — or, when the
study allows it, until ``fill_after`` seconds after its first person arrived, when the
seats still empty are filled with the study's LLM agents (:meth:`HostedSession.fill_empty`;
the record's metadata names them) — then plays its spec once
(:func:`~sotopia_are.studies.play_episode`: a game by its rules, a conversation by the
runner; a complete game then gets its outcome verdict) with its
:class:`HumanSeat` s and the agents of the other seats, streaming the one
:class:`~sotopia_are.record.EpisodeRecord` to the store as it is played (human seats
labelled :data:`HUMAN` in ``record.models``) — its model calls included, each streamed
as soon as it is made (:mod:`sotopia_are.hosting.calls`; the record keeps them in the
order made). The session keeps the conversation entries
as they happen (from the same log, through the same sink the runner feeds every sink),
and a version per seat that grows only with what THAT seat may perceive, so a client
waiting for changes learns nothing from the timing of what it may not see.

A session resumed after a server restart (``resumption``) starts at once and replays its
stored log before asking anyone (:mod:`sotopia_are.hosting.resume`).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pydantic import JsonValue

from sotopia_are.evaluation import LLMJudge
from sotopia_are.record import EpisodeRecord, RecordJudge, record_of_result
from sotopia_are.social import (
    CallRecord,
    ConversationEntry,
    EntrySink,
    EpisodeSpec,
    EpisodeStatus,
    Sink,
    SocialAgent,
)
from sotopia_are.storage import EpisodeRecorder, EpisodeStore
from sotopia_are.studies import arate, free_judges, mark_stopped, play_episode

from .calls import ReportingAgent
from .resume import ReplayingAgent, ResumingRecorder, Resumption
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
    ``fillers`` (with their ``filler_labels``) are the agents that may take a human seat
    left empty ``fill_after`` seconds after the session's first arrival (none: the
    session waits for everyone); ``filled`` lists the seats they took. ``resumption`` is
    what the session had played before a restart. ``calls`` are the model calls made
    so far, in the order made (a resumed session's start with those stored before).
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
    fillers: dict[str, SocialAgent] = field(default_factory=dict)
    filler_labels: dict[str, str] = field(default_factory=dict)
    fill_after: float | None = None
    filled: list[str] = field(default_factory=list)
    resumption: Resumption | None = None
    calls: list[CallRecord] = field(default_factory=list)
    _call_sink: EpisodeRecorder | ResumingRecorder | None = None
    _fill_timer: asyncio.TimerHandle | None = None
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
        if seat in self.filled:
            return  # too late: an agent holds the seat
        arrival = self.arrivals.get(seat)
        if arrival is None:
            self.arrivals[seat] = Arrival(self.clock(), participant)
            if self.fill_after is not None and self.fillers and self._fill_timer is None:
                loop = asyncio.get_running_loop()
                self._fill_timer = loop.call_later(self.fill_after, self.fill_empty)
        elif participant and not arrival.participant:
            arrival.participant = participant
        if self.state is SessionState.WAITING and set(self.arrivals) >= set(self.seats):
            self.start()

    def fill_empty(self) -> None:
        """Give every human seat nobody has arrived at to its filler agent and start
        (if the session is still waiting and has fillers for those seats)."""
        if self.state is not SessionState.WAITING:
            return
        empty = [name for name in self.seats if name not in self.arrivals]
        if any(name not in self.fillers for name in empty):
            return
        for name in empty:
            self.filled.append(name)
            self.labels[name] = self.filler_labels[name]
        self.start()

    def start(self) -> None:
        """Play the episode in the background on the running event loop (once)."""
        if self._fill_timer is not None:
            self._fill_timer.cancel()
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
        hosting: dict[str, JsonValue] = {
            "session": self.number,
            "humans": {
                name: {
                    "waited_s": round(start - arrival.at, 3),
                    "participant": arrival.participant,
                }
                for name, arrival in self.arrivals.items()
            },
            "filled": list(self.filled),
        }
        if self.resumption is not None:
            before = self.resumption.metadata.get("hosting")
            earlier = before.get("resumed") if isinstance(before, dict) else None
            hosting["resumed"] = [
                *(earlier if isinstance(earlier, list) else []),
                {"at": round(self.clock(), 3), "events_replayed": len(self.resumption.events)},
            ]
        return {"hosting": hosting}

    def resume_from(self, resumption: Resumption) -> None:
        """Take up the session the store holds as ``resumption`` (see the module): its
        people's arrivals, filled seats and model calls as they were; call :meth:`start`
        next."""
        self.resumption = resumption
        self.calls = list(resumption.calls)
        now = self.clock()
        before = resumption.metadata.get("hosting")
        before = before if isinstance(before, dict) else {}
        filled = before.get("filled")
        for name in filled if isinstance(filled, list) else []:
            if isinstance(name, str) and name in self.fillers:
                self.filled.append(name)
                self.labels[name] = self.filler_labels[name]
        humans = before.get("humans")
        for name, arrival in (humans if isinstance(humans, dict) else {}).items():
            if name in self.seats and isinstance(arrival, dict):
                waited, participant = arrival.get("waited_s"), arrival.get("participant")
                self.arrivals[name] = Arrival(
                    now - (waited if isinstance(waited, int | float) else 0.0),
                    participant if isinstance(participant, str) else "",
                )

    def _player(self, name: str) -> SocialAgent:
        """Who plays seat ``name``: its person, its filler or its agent — replaying the
        log first in a resumed session."""
        seat = self.seats.get(name)
        player = self.fillers[name] if name in self.filled else seat or self.agents[name]
        if self.resumption is not None:
            answers = self.resumption.answers.get(name, ())
            if seat is not None and name not in self.filled:
                player = ReplayingAgent(player, answers, seat.replayed)
            else:
                player = ReplayingAgent(player, answers)
        return ReportingAgent(player, self._on_call)

    def _on_call(self, call: CallRecord) -> None:
        self.calls.append(call)
        if self._call_sink is not None:
            self._call_sink.on_call(self.episode_id, call)

    async def _play(self) -> None:
        spec = self.spec
        sinks: list[Sink] = [EntrySink(spec.turn_seconds, self._on_entry)]
        if self.store is not None:
            recorder = EpisodeRecorder(self.store, tag=self.tag, models=self.labels)
            metadata = self.metadata()

            def restart() -> None:
                recorder.start(spec, scenario_id=self.scenario_id, metadata=metadata)

            if self.resumption is None:
                restart()
                self._call_sink = recorder
            else:
                self._call_sink = ResumingRecorder(
                    recorder, self.resumption.events, restart, self.resumption.calls
                )
            sinks.insert(0, self._call_sink)
        players = {name: self._player(name) for name in spec.agent_names}
        try:
            result = await play_episode(spec, players, sinks=sinks)
            # The calls as they were made and streamed (those before a restart too), not
            # the runner's, which has only this process's.
            record = record_of_result(
                result, models=self.labels, tag=self.tag, scenario_id=self.scenario_id
            ).model_copy(update={"calls": tuple(self.calls)})
            if record.status is EpisodeStatus.COMPLETE:
                # A game's outcome verdict first (free), then the study's judge if any.
                judges: list[LLMJudge | RecordJudge] = [*free_judges(spec)]
                if self.judge is not None:
                    judges.append(self.judge)
                for judge in judges:
                    record = await arate(record, judge, store=self.store, preflight=False)
            self.record = record
            # A game the runner ended as failed (e.g. a seat refused three times) is over
            # but not finished: the seats are told it failed.
            complete = record.status is EpisodeStatus.COMPLETE
            self.state = SessionState.FINISHED if complete else SessionState.FAILED
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
