"""`batch`'s defaults fill a fast server's latency (many episodes and requests in flight
per worker, not 16 in all), an explicit ``concurrency`` still bounds them, a worker's
session counts calls without keeping them, and the stored records do not depend on the
transport (HTTP or litellm)."""

import asyncio
import gc
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import sotopia_are as sa
from sotopia_are.llm import LLMSession, RetryPolicy, Usage
from sotopia_are.storage import EpisodeStore
from sotopia_are.studies import BatchProgress
from sotopia_are.studies.batch import plan_batch
from sotopia_are.studies.workers import _worker_start_method, worker_concurrency
from sotopia_are.testing import LocalLLMServer, ReplyLike

MODEL = "openai/test-model"
NAMES = ["Mara Quinn", "Teo Alvarez"]
SPEAK = json.dumps({"action_type": "speak", "argument": "Half the loaves for half price?"})


def spec(name: str, turns: int = 2) -> sa.EpisodeSpec:
    return sa.EpisodeSpec(
        episode_id=name,
        scenario=f"A bakery before closing [{name}].",
        agent_names=NAMES,
        agent_backgrounds=["the baker", "a café owner"],
        agent_goals=["sell the bread", "buy it cheap"],
        max_turns=turns,
        max_stale_turns=turns,
    )


def plays(body: Mapping[str, Any]) -> ReplyLike:
    """Agents speak; the judge rates everyone low with a reason naming them."""
    if "impartial expert judge" not in body["messages"][0]["content"]:
        return SPEAK
    dimensions = sa.SOTOPIA_EVAL.dimensions
    return json.dumps(
        {n: {d.name: {"reasoning": f"{n} did ok", "score": d.low} for d in dimensions}
         for n in NAMES}
    )  # fmt: skip


def config(server: LocalLLMServer, **changes: Any) -> sa.LLMConfig:
    return config_at(server.url, **changes)


def test_episodes_at_once_by_default_follow_the_endpoint() -> None:
    local = sa.LLMConfig(api_base="http://127.0.0.1:9/v1")
    planned = plan_batch([spec("a")], dict.fromkeys(NAMES, MODEL), tag="t")
    plan = sa.studies.BatchPlan("t", tuple(planned), tuple(planned), 0)
    assert worker_concurrency(None, 2, local, plan) == (128, local)
    hosted = sa.LLMConfig()
    hosted_plan = plan_batch([spec("a")], dict.fromkeys(NAMES, "gpt-4o-mini"), tag="t")
    plan = sa.studies.BatchPlan("t", tuple(hosted_plan), tuple(hosted_plan), 0)
    assert worker_concurrency(None, 2, hosted, plan) == (16, hosted)
    # Given in all: a worker's share, which also bounds its requests unless the config does.
    share, used = worker_concurrency(10, 4, local, plan)
    assert (share, used.max_concurrency) == (3, 3)
    fixed = local.model_copy(update={"max_concurrency": 7})
    assert worker_concurrency(10, 4, fixed, plan) == (3, fixed)


def test_the_defaults_keep_many_episodes_in_flight(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.latency = 0.1
    llm_server.rule = plays
    progress: list[BatchProgress] = []
    collector = gc.get_threshold()
    result = sa.batch(
        [spec(f"e{n}") for n in range(40)], MODEL, tag="wide", store=store,
        config=config(llm_server), workers=1, on_progress=progress.append,
    )  # fmt: skip
    assert not result.failed and len(result.outcomes) == 40
    # All 40 at once (the old default kept 16 in all), each making two requests in turn.
    assert llm_server.max_in_flight >= 30
    assert len(llm_server.chat_requests) == 80
    assert progress[-1].calls == result.usage.calls == 80
    # The worker's tuned garbage collector (here: this process's) is given back as it was.
    assert gc.get_threshold() == collector and gc.get_freeze_count() == 0


def test_a_given_concurrency_still_bounds_episodes_and_requests(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.latency = 0.05
    llm_server.rule = plays
    result = sa.batch(
        [spec(f"e{n}") for n in range(12)], MODEL, tag="narrow", store=store,
        judge_model=MODEL, config=config(llm_server), workers=1, concurrency=3,
    )  # fmt: skip
    assert not result.failed
    assert llm_server.max_in_flight <= 3


def test_a_worker_session_counts_calls_without_keeping_them(
    llm_server: LocalLLMServer,
) -> None:
    async def play() -> tuple[LLMSession, list[LLMSession]]:
        worker = LLMSession(config(llm_server), retain_calls=False)
        episodes = [worker.scoped(f"episode-{n}") for n in range(3)]
        for episode in episodes:
            for word in ("a", "b"):
                await episode.scoped("agent").generate(
                    MODEL, "llm/repair.j2", {"error": word, "schema": "{}"}
                )
        return worker, episodes

    worker, episodes = asyncio.run(play())
    assert worker.calls == [] and worker.call_count == 6
    kept = [call for episode in episodes for call in episode.calls]
    assert len(kept) == 6 and worker.usage() == Usage.of(kept)


def test_stored_records_do_not_depend_on_the_transport(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = plays
    played: dict[str, dict[str, Any]] = {}
    for transport in ("http", "litellm"):
        result = sa.batch(
            [spec(f"e{n}", turns=3) for n in range(3)], MODEL, tag=transport, store=store,
            judge_model=MODEL, config=config(llm_server, transport=transport), workers=1,
        )  # fmt: skip
        assert not result.failed
        records = [store.load(outcome.episode_id) for outcome in result.outcomes]
        played[transport] = {
            record.scenario_id: {
                "status": (record.status, record.turns_played),
                "calls": [_kept(c) for c in record.calls],
                "judged": [_kept(c) for v in record.verdicts for c in v.evaluation.calls],
                "scores": record.scores,
            }
            for record in records
        }
    assert played["http"] == played["litellm"]
    assert all(len(r["calls"]) == 3 and r["judged"] for r in played["http"].values())


def _kept(call: Any) -> tuple[Any, ...]:
    """What a call record keeps, but its timings and the episode's id in its scope."""
    scope = call.scope.split("/", 1)[1] if call.scope else None
    messages = [m.content for m in call.messages]
    tokens = (call.prompt_tokens, call.completion_tokens, call.cost_usd)
    return (scope, call.template, call.raw_text, call.parsed, messages, call.params, tokens,
            call.output_mode)  # fmt: skip


FORKED_BATCH = """
import sys
import sotopia_are as sa
from sotopia_are.studies.workers import _worker_start_method
from test_studies_batch_throughput import config_at, spec

print(_worker_start_method())
with sa.connect(sys.argv[1]) as store:
    result = sa.batch(
        [spec(f"e{n}", turns=3) for n in range(4)], sys.argv[3], tag="forked", store=store,
        judge_model=sys.argv[3], config=config_at(sys.argv[2]), workers=2,
    )
assert not result.failed and result.workers == 2, result
"""


def config_at(url: str, **changes: Any) -> sa.LLMConfig:
    fast = RetryPolicy(max_attempts=2, initial_backoff_s=0.01, max_backoff_s=0.02)
    return sa.LLMConfig(api_base=url, timeout_s=10.0, retry=fast, **changes)


def test_forked_workers_store_what_spawned_ones_do(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = plays
    # A script of one thread (the CLI's case) forks its workers ...
    forked = subprocess.run(
        [sys.executable, "-c", FORKED_BATCH, str(store.url), llm_server.url, MODEL],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).parent,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    assert forked.returncode == 0, forked.stderr
    assert forked.stdout.split() == ["fork"]
    # ... where this process, which runs the server's thread, spawns them.
    assert _worker_start_method() == "spawn"
    spawned = sa.batch(
        [spec(f"e{n}", turns=3) for n in range(4)], MODEL, tag="spawned", store=store,
        judge_model=MODEL, config=config(llm_server), workers=2,
    )  # fmt: skip
    assert not spawned.failed and spawned.workers == 2
    played: dict[str, dict[str, Any]] = {}
    for tag in ("forked", "spawned"):
        played[tag] = {
            record.scenario_id: (
                record.status,
                record.turns_played,
                [_kept(c) for c in record.calls],
                [_kept(c) for v in record.verdicts for c in v.evaluation.calls],
                record.scores,
            )
            for record in (store.load(pk) for pk in store.episode_ids(tag=tag))
        }
    assert played["forked"] == played["spawned"] and len(played["forked"]) == 4
