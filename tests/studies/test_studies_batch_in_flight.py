"""`batch` reports the model requests in flight about once a second while its episodes
run, so a batch waiting on a stuck server shows it; the count drops to 0 at the end. Its
workers together send a local server as many requests as it decodes at once, and by
default there is one more worker than the cores, but no more than such a server's slots."""

import json
import os

import pytest

import sotopia_are as sa
from sotopia_are.llm import InFlight, RetryPolicy
from sotopia_are.storage import EpisodeStore
from sotopia_are.studies import BatchProgress
from sotopia_are.studies.workers import default_workers
from sotopia_are.testing import LocalLLMServer, Reply

MODEL = "openai/test-model"
LEAVE = json.dumps({"action_type": "leave", "argument": ""})
SPEAK = json.dumps({"action_type": "speak", "argument": "Two loaves, then?"})


def bakery_days(prefix: str, days: int, **limits: int) -> list[sa.EpisodeSpec]:
    """``days`` episodes of one scenario, one a day, with the turn ``limits`` given."""
    return [
        sa.EpisodeSpec(
            episode_id=f"{prefix}-{n}",
            scenario=f"A bakery before closing, day {n}.",
            agent_names=["Mara Quinn", "Teo Alvarez"],
            agent_backgrounds=["the baker", "a café owner"],
            agent_goals=["sell the bread", "buy it cheap"],
            **limits,
        )
        for n in range(days)
    ]


def test_a_hanging_request_shows_in_the_heartbeats_then_ends_the_episode(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.enqueue(Reply.hanging())  # the first agent request gets no answer
    llm_server.rule = lambda _body: LEAVE
    spec = sa.EpisodeSpec(
        episode_id="stuck",
        scenario="A bakery before closing.",
        agent_names=["Mara Quinn", "Teo Alvarez"],
        agent_backgrounds=["the baker", "a café owner"],
        agent_goals=["sell the bread", "buy it cheap"],
        max_turns=2,
    )
    config = sa.LLMConfig(api_base=llm_server.url, timeout_s=1.5, retry=RetryPolicy(max_attempts=3))
    progress: list[BatchProgress] = []
    result = sa.batch(
        [spec], MODEL, tag="hb", store=store, config=config, workers=1, on_progress=progress.append
    )
    seen = [p.in_flight for p in progress]
    waiting = [beat for beat in seen if beat.count]
    assert waiting and all(beat.count == 1 for beat in waiting)
    assert max(beat.oldest_s for beat in waiting) >= 0.9
    assert seen[-1] == InFlight()
    # The episode was seen running while it waited, and at the end it is counted once.
    assert any(p.running == 1 for p in progress)
    last = progress[-1]
    assert (last.total, last.started, last.finished, last.running) == (1, 1, 1, 0)
    (outcome,) = result.outcomes
    record = store.load(outcome.episode_id)
    errors = [call.error or "" for call in record.calls if call.error]
    # One timeout ended the call (the default budget), though three attempts were allowed.
    silent = "gave no answer: 1 of 1 requests timed out (it answered nothing for 1.5 s"
    assert any(silent in e for e in errors)


def test_with_worker_processes_the_last_word_has_nothing_in_flight(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    # Each worker's first request hangs past a heartbeat, which reports it in flight; the
    # workers' final heartbeats come after their last outcome.
    llm_server.enqueue(Reply.hanging())
    llm_server.enqueue(Reply.hanging())
    llm_server.rule = lambda _body: LEAVE
    specs = bakery_days("stuck", 2, max_turns=2)
    config = sa.LLMConfig(api_base=llm_server.url, timeout_s=1.5, retry=RetryPolicy(max_attempts=1))
    progress: list[BatchProgress] = []
    result = sa.batch(
        specs, MODEL, tag="hb2", store=store, config=config, workers=2, on_progress=progress.append
    )
    assert result.workers == 2 and len(result.outcomes) == 2
    assert any(p.in_flight.count for p in progress)
    assert progress[-1].in_flight == InFlight() and progress[-1].finished == 2


def test_two_workers_share_a_servers_slots_instead_of_queueing_twice_as_many(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    # A llama.cpp-like server decoding 4 requests at once: each of the two workers keeps
    # 2 of them busy, from the first request on (each would send 4, its initial guess,
    # and more as latency stays flat, leaving the rest in the server's queue).
    llm_server.slots, llm_server.latency = 4, 0.05
    llm_server.rule = lambda _body: SPEAK
    specs = bakery_days("shared", 12, max_turns=4, max_stale_turns=4)
    result = sa.batch(
        specs, MODEL, tag="slots", store=store, config=sa.LLMConfig(api_base=llm_server.url),
        workers=2,
    )  # fmt: skip
    assert result.workers == 2 and not result.failed
    assert len(llm_server.chat_requests) == 48
    assert llm_server.max_in_flight == 4


def test_by_default_one_worker_more_than_the_cores_but_no_more_than_the_slots(
    llm_server: LocalLLMServer, store: EpisodeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    llm_server.rule = lambda _body: SPEAK
    config = sa.LLMConfig(api_base=llm_server.url)
    # A server that does not say its slots: the cores and one more.
    assert default_workers(config, [MODEL]) == 3
    assert default_workers(sa.LLMConfig(), ["gpt-4o-mini"]) == 3  # a provider: nothing asked
    result = sa.batch(bakery_days("cores", 4, max_turns=2), MODEL, tag="cores", store=store,
                      config=config)  # fmt: skip
    assert result.workers == 3 and not result.failed
    # A llama.cpp-like server with 2 slots: 2 workers, 1 request out each, none queued.
    llm_server.slots = 2
    assert default_workers(config, [MODEL]) == 2
    result = sa.batch(bakery_days("slots2", 4, max_turns=2), MODEL, tag="slots2", store=store,
                      config=config)  # fmt: skip
    assert result.workers == 2 and not result.failed
