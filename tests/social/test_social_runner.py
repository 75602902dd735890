"""The runner: events, times, ENV events before observations, failures, sinks, many episodes."""

import asyncio
import gc
import weakref
from collections.abc import Sequence

import pytest
from social_support import LEAVE, NAMES, NOTHING, PlaybackAgent, make_spec, say

from sotopia_are.llm import Attempt, LLMCall
from sotopia_are.messages import AgentAction, parse_script
from sotopia_are.record import record_of_result
from sotopia_are.simulation.types import CompletedEvent, EventType
from sotopia_are.social import (
    AgentTurn,
    CallRecord,
    EpisodeResult,
    run_episode,
    run_episodes,
)

MIRA, TOMAS, PRIYA = NAMES


async def test_each_action_is_one_agent_event_at_its_turn_time() -> None:
    spec = make_spec(max_turns=4, turn_seconds=30)
    agents = [PlaybackAgent(MIRA, [say("a"), say("c")]), PlaybackAgent(TOMAS, [say("b")])]
    result = await run_episode(spec, agents)
    assert result.status == "complete" and result.turns_played == 4
    assert result.reason == "reached the maximum of 4 turns"
    assert [(e.event_type, e.event_time) for e in result.events] == [
        (EventType.AGENT, 0.0),
        (EventType.AGENT, 30.0),
        (EventType.AGENT, 60.0),
        (EventType.AGENT, 90.0),
    ]
    assert result.actions() == [
        (MIRA, say("a")),
        (TOMAS, say("b")),
        (MIRA, say("c")),
        (TOMAS, NOTHING),
    ]
    assert result.environment.event_log.list_view() == list(result.events)


async def test_env_events_are_processed_before_the_turn_they_precede() -> None:
    spec = make_spec(
        max_turns=4,
        env_events=[{"turn": 2, "content": "A storm siren wails.", "to": [MIRA]}],
    )
    mira, tomas = PlaybackAgent(MIRA, [say("hi")] * 2), PlaybackAgent(TOMAS, [say("yo")] * 2)
    result = await run_episode(spec, [mira, tomas])
    kinds = [(e.event_type, e.function_name()) for e in result.events]
    assert kinds[2] == (EventType.ENV, "announce") and result.events[2].event_time == 2.0
    assert "A storm siren wails." in mira.turns[1].observation.last_turn  # Mira acts in turn 2
    assert all("siren" not in t.transcript + t.observation.last_turn for t in tomas.turns)


async def test_the_log_is_deterministic() -> None:
    def play() -> list[PlaybackAgent]:
        return [PlaybackAgent(n, [say(f"{n} {i}") for i in range(3)]) for n in NAMES]

    spec = make_spec(3, turn_policy="random", seed=7, env_events=[{"turn": 1, "content": "x"}])
    first = await run_episode(spec, play())
    second = await run_episode(spec, play())
    assert first.canonical_log() == second.canonical_log()


class Exploding(PlaybackAgent):
    async def act(self, turn: AgentTurn) -> AgentAction:
        if turn.turn_number >= 2:
            raise RuntimeError("model server unreachable")
        return await super().act(turn)


async def test_an_agent_that_raises_fails_the_episode_loudly() -> None:
    agents = [Exploding(MIRA, [say("hi")]), PlaybackAgent(TOMAS, [say("hey")])]
    result = await run_episode(make_spec(), agents)
    assert result.status == "failed" and result.failed_agent == MIRA
    assert result.reason == f"{MIRA} raised RuntimeError in turn 2: model server unreachable"
    assert len(result.events) == 2 and result.turns_played == 2


async def test_a_rejected_action_fails_the_episode_and_stays_in_the_log() -> None:
    agents = [PlaybackAgent(MIRA, [say("psst", ["Nobody"])]), PlaybackAgent(TOMAS)]
    result = await run_episode(make_spec(), agents)
    assert result.status == "failed" and result.failed_agent == MIRA
    assert "unknown recipient 'Nobody'" in result.reason
    [event] = result.events
    assert event.failed()


async def test_an_unavailable_action_type_fails_the_episode() -> None:
    spec = make_spec(action_types=["none", "speak"])
    result = await run_episode(spec, [PlaybackAgent(MIRA, [LEAVE]), PlaybackAgent(TOMAS)])
    assert result.status == "failed" and "'leave', which is not available" in result.reason
    assert result.events == ()


async def test_the_agents_must_match_the_participants() -> None:
    with pytest.raises(ValueError, match="needs one agent for each"):
        await run_episode(make_spec(), [PlaybackAgent(MIRA)])
    with pytest.raises(ValueError, match="under the name"):
        await run_episode(make_spec(), {MIRA: PlaybackAgent(TOMAS), TOMAS: PlaybackAgent(MIRA)})


class CollectingSink:
    def __init__(self) -> None:
        self.events: list[tuple[str, CompletedEvent]] = []
        self.ended: list[tuple[str, EpisodeResult]] = []

    def on_event(self, episode_id: str, event: CompletedEvent) -> None:
        self.events.append((episode_id, event))

    def on_episode_end(self, episode_id: str, result: EpisodeResult) -> None:
        self.ended.append((episode_id, result))


async def test_sinks_receive_every_event_as_it_happens_then_the_result() -> None:
    sink, seen = CollectingSink(), []
    spec = make_spec(episode_id="ep-1", max_turns=3, env_events=[{"turn": 1, "content": "x"}])
    result = await run_episode(
        spec,
        [PlaybackAgent(MIRA, [say("a")]), PlaybackAgent(TOMAS, [say("b")])],
        sinks=[sink, lambda episode_id, event: seen.append(event)],
    )
    assert [e for _, e in sink.events] == list(result.events) == seen
    assert {episode for episode, _ in sink.events} == {"ep-1"}
    assert sink.ended == [("ep-1", result)]
    with pytest.raises(TypeError, match="not a sink"):
        await run_episode(spec, [PlaybackAgent(MIRA), PlaybackAgent(TOMAS)], sinks=[42])  # type: ignore[list-item]


async def test_a_finished_episode_is_freed_without_the_cyclic_collector() -> None:
    # A batch worker plays thousands: were the environment, its app and its logged
    # events still in cycles, each would wait for the collector to walk it.
    spec = make_spec(max_turns=3, env_events=[{"turn": 1, "content": "x"}])
    sink, seen = CollectingSink(), []
    agents = [PlaybackAgent(MIRA, [say("a")]), PlaybackAgent(TOMAS, [say("b")])]
    collecting = gc.isenabled()
    gc.disable()
    try:
        result = await run_episode(
            spec, agents, sinks=[sink, lambda episode_id, event: seen.append(event)]
        )
        environment = weakref.ref(result.environment)
        logged = list(result.events)
        assert seen == logged and len(logged) == 4
        del result, sink
        assert environment() is None
    finally:
        if collecting:
            gc.enable()


def fake_call(prompt_tokens: int, completion_tokens: int, cost_usd: float | None) -> LLMCall:
    """A call record as the LLM layer writes it, for an answer with these counts."""
    attempt = Attempt(number=1, latency_s=0.0, raw_text="{}", cost_usd=cost_usd)
    return LLMCall.from_attempts(
        [
            attempt.model_copy(
                update={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
            )
        ],
        model="m",
        template="t",
        messages=[],
        latency_s=0.0,
    )


class CountingAgent(PlaybackAgent):
    """Records a fake model call per action, and how many agents are acting at once."""

    active = 0
    peak = 0

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.calls: list[LLMCall] = []

    async def act(self, turn: AgentTurn) -> AgentAction:
        CountingAgent.active += 1
        CountingAgent.peak = max(CountingAgent.peak, CountingAgent.active)
        await asyncio.sleep(0.001)
        CountingAgent.active -= 1
        self.calls.append(fake_call(10, 2, None if turn.turn_number == 0 else 0.5))
        return say(f"turn {turn.turn_number}")

    def call_records(self) -> Sequence[CallRecord]:
        return self.calls


async def test_usage_totals_sum_the_call_records() -> None:
    result = await run_episode(make_spec(max_turns=3), [CountingAgent(MIRA), CountingAgent(TOMAS)])
    usage = record_of_result(result).usage  # the totals are the record's
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (3, 30, 6)
    # The known costs add up; the call without a price is counted, never taken as free.
    assert (usage.cost_usd, usage.unpriced_calls) == (1.0, 1)
    assert [len(result.call_records[n]) for n in (MIRA, TOMAS)] == [2, 1]


async def test_run_episodes_bounds_concurrency_and_keeps_order() -> None:
    CountingAgent.peak = 0
    specs = [make_spec(episode_id=f"ep-{i}", max_turns=3) for i in range(12)]
    results = await run_episodes(
        specs, lambda spec: [CountingAgent(n) for n in spec.agent_names], max_concurrent=4
    )
    assert [r.episode_id for r in results] == [s.episode_id for s in specs]
    assert all(r.status == "complete" for r in results)
    assert CountingAgent.peak == 4
    with pytest.raises(ValueError, match="two episodes have the id"):
        await run_episodes([specs[0], specs[0]], lambda spec: [])
    with pytest.raises(ValueError, match="max_concurrent"):
        await run_episodes(specs, lambda spec: [], max_concurrent=0)


async def test_the_script_of_a_result_parses_back_to_its_actions() -> None:
    agents = [
        PlaybackAgent(MIRA, [say("Plot 7 is mine."), say("Tomas, join me?", [TOMAS])]),
        PlaybackAgent(PRIYA, [AgentAction(action_type="action", argument="plants a flag")]),
        PlaybackAgent(
            TOMAS, [AgentAction(action_type="non-verbal communication", argument="nods")]
        ),
    ]
    result = await run_episode(make_spec(3, max_turns=6), agents)
    parsed = parse_script(result.to_script(), NAMES)
    assert [(item.speaker, item.action) for item in parsed] == result.actions()
