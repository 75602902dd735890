"""Resuming a session after a server restart: replay what the store holds, then go on live.

A session's events are streamed to the store as they are played, and the kernel is
deterministic: the same spec with the same answers gives the same log, event for event.
So a restarted server plays the session again from the start with each seat first
re-making the answers the log holds (:func:`logged_answers`, played by
:class:`ReplayingAgent`) — the people's and the models' alike, no model is called for
them — and then asking the live seats as usual. People reconnecting with their old links
find the state they left.

The replayed events must be the stored ones: :class:`ResumingRecorder` checks each
against the stored event, byte for byte, and writes nothing until the whole stored
prefix has been matched. Only then is the episode started afresh in the store
(``attempt`` counts up) and the prefix written again, followed by what is played live; a
replay that differs fails the session with :class:`ResumeError`, leaving the stored
episode as it was (``incomplete``). The final record is therefore the record one
uninterrupted play with the same answers gives.

The model calls are streamed to the store as they are made
(:class:`~sotopia_are.hosting.calls.ReportingAgent`): the calls stored before the restart
are written again with the events, followed by the live ones (a call made while the
replay is still being checked waits for it), so the resumed record holds every call
exactly once, in the order made.

What a replay cannot re-make: a game move refused for another reason than a timeout
(the log keeps the refusal, not the move) — its replay differs and the session fails
loudly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from sotopia_are import SotopiaAreError
from sotopia_are.messages import AgentAction, GameMove
from sotopia_are.simulation.data_handler.models import ExportedCompletedEvent
from sotopia_are.simulation.types import CompletedEvent
from sotopia_are.social import (
    ENVIRONMENT_SENDER,
    AgentTurn,
    CallRecord,
    ConversationEntry,
    EpisodeResult,
    EpisodeSpec,
    EpisodeViews,
    SocialAgent,
)
from sotopia_are.storage import EpisodeRecorder
from sotopia_are.storage.events import encode_event

from .seat import TIMEOUT_MOVE

__all__ = ["ReplayingAgent", "ResumeError", "ResumingRecorder", "Resumption", "logged_answers"]

Answer = AgentAction | GameMove


class ResumeError(SotopiaAreError):
    """A session's replay did not give back its stored events (it cannot be resumed)."""


@dataclass(frozen=True)
class Resumption:
    """What a session had played before the restart: its stored ``events`` (as the
    store encodes them), each seat's ``answers`` in them, the episode's ``metadata`` and
    the model ``calls`` made so far (in the order made)."""

    events: tuple[str, ...]
    answers: Mapping[str, Sequence[Answer]]
    metadata: Mapping[str, JsonValue]
    calls: tuple[CallRecord, ...] = ()

    @classmethod
    def of_stored(
        cls,
        spec: EpisodeSpec,
        events: Sequence[ExportedCompletedEvent],
        metadata: Mapping[str, JsonValue],
        calls: Sequence[Mapping[str, Any]] = (),
    ) -> Resumption:
        """The resumption of ``spec``'s episode whose stored events are ``events`` and
        stored calls ``calls`` (as the store reads them back)."""
        entries = EpisodeViews.of_exported(spec, events).entries
        return cls(
            tuple(encode_event(event) for event in events),
            logged_answers(spec, entries),
            dict(metadata),
            tuple(CallRecord.model_validate(call) for call in calls),
        )


def logged_answers(
    spec: EpisodeSpec, entries: Iterable[ConversationEntry]
) -> dict[str, list[Answer]]:
    """Each seat's answers to its turns in the log ``entries`` of ``spec``, in order.

    In a conversation that is each seat's actions (doing nothing included). In a game it
    is each seat's moves, with a refused answer (the refusal, told to that seat alone,
    is logged before the move that was then accepted) re-made as the timeout move —
    the one refusal a hosted game can re-make (see the module).
    """
    answers: dict[str, list[Answer]] = {name: [] for name in spec.agent_names}
    game = spec.game is not None
    for entry in entries:
        if game and entry.move is not None:
            answers[entry.sender].append(entry.move)
        elif not game and entry.action is not None:
            answers[entry.sender].append(entry.action)
        elif game and entry.sender == ENVIRONMENT_SENDER and entry.to and len(entry.to) == 1:
            (name,) = entry.to
            if entry.content.startswith(f"{name}, your move was refused:"):
                answers[name].append(GameMove(move=TIMEOUT_MOVE))
    return answers


class ReplayingAgent:
    """Plays ``answers`` first, one per turn (telling ``on_replayed`` of each), then
    hands every later turn to ``agent``."""

    def __init__(
        self,
        agent: SocialAgent,
        answers: Sequence[Answer],
        on_replayed: Callable[[AgentTurn, Answer], None] = lambda turn, answer: None,
    ) -> None:
        self._agent = agent
        self._answers = list(answers)
        self._on_replayed = on_replayed

    @property
    def name(self) -> str:
        return self._agent.name

    @property
    def replaying(self) -> bool:
        """Whether answers from the log are left."""
        return bool(self._answers)

    async def act(self, turn: AgentTurn) -> Answer:
        """The next logged answer, or the live agent's once they are used up."""
        if self._answers:
            answer = self._answers.pop(0)
            self._on_replayed(turn, answer)
            return answer
        return await self._agent.act(turn)

    def call_records(self) -> Sequence[CallRecord]:
        """The live agent's calls (the replayed answers made none)."""
        return self._agent.call_records()


class ResumingRecorder:
    """A sink that checks the replayed events against the stored ``earlier`` ones and
    then records through ``recorder`` (see the module).

    ``restart`` stores the episode as running again (it drops the stored events and
    calls, which are then written again: the events from the replay, the calls from
    ``earlier_calls``); it is called once the replay has matched every earlier event —
    at the episode's start if there were none.
    """

    def __init__(
        self,
        recorder: EpisodeRecorder,
        earlier: Sequence[str],
        restart: Callable[[], None],
        earlier_calls: Sequence[CallRecord] = (),
    ) -> None:
        self._recorder = recorder
        self._earlier = list(earlier)
        self._restart = restart
        self._held: list[CompletedEvent] = []
        self._calls = list(earlier_calls)
        self._live = False

    @property
    def live(self) -> bool:
        """Whether the replay has passed every earlier event (and the store is written)."""
        return self._live

    def on_episode_start(self, episode_id: str, spec: EpisodeSpec) -> None:
        if not self._earlier:
            self._go_live(episode_id)

    def on_event(self, episode_id: str, event: CompletedEvent) -> None:
        if self._live:
            self._recorder.on_event(episode_id, event)
            return
        position = len(self._held)
        if encode_event(event) != self._earlier[position]:
            raise ResumeError(
                f"episode {episode_id}: replaying its log gave a different event {position} "
                "than the stored one; it cannot be resumed (the stored events are kept)"
            )
        self._held.append(event)
        if len(self._held) == len(self._earlier):
            self._go_live(episode_id)

    def on_call(self, episode_id: str, call: CallRecord) -> None:
        """Stream a model call made now (held until the replay has been checked)."""
        if self._live:
            self._recorder.on_call(episode_id, call)
        else:
            self._calls.append(call)

    def on_episode_end(self, episode_id: str, result: EpisodeResult) -> None:
        if not self._live:
            raise ResumeError(
                f"episode {episode_id}: the replay ended after {len(self._held)} of the "
                f"{len(self._earlier)} stored events; it cannot be resumed"
            )
        self._recorder.on_episode_end(episode_id, result)

    def _go_live(self, episode_id: str) -> None:
        self._restart()
        self._live = True
        for event in self._held:
            self._recorder.on_event(episode_id, event)
        self._held.clear()
        for call in self._calls:
            self._recorder.on_call(episode_id, call)
        self._calls.clear()
