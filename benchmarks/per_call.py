"""CPU of the framework's own Python work per model call, without the network or the store.

A batch worker spends each model call's CPU in three places: the HTTP client, the store's
writes, and everything else — rendering the prompt, the session's accounting, parsing
the answer, the kernel logging the action, the agents' views, encoding the event for the
store, the episode's record and the judge's per-episode work. This measures the third
alone, in one process: E two-agent episodes of T turns (the throughput batch's spec) are
played by LLM agents and each is rated by the judge, as a batch worker plays them
(``studies.arun``'s steps without a store: play, record, rate), with every event encoded
as the store writes it (``storage.events.encode_event``). Each request is answered at
once, in this process, with the simplest instance of its JSON schema (what
``fake_openai_server.py`` answers): ``LLMSession._answer`` is replaced here, so no
socket, HTTP parser or event-loop wait is measured. The figure is the process CPU time
(``time.process_time``) over the episodes, divided by the model calls made; the median
of ``--repeats`` rounds after a warm-up episode.

Run: ``python benchmarks/per_call.py [--episodes 300] [--turns 20] [--repeats 5]``;
compare two versions with ``PYTHONPATH=<version>``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_openai_server import instance

from sotopia_are.agents import llm_agents_for
from sotopia_are.evaluation import LLMJudge, Rubric
from sotopia_are.llm import LLMConfig, LLMSession
from sotopia_are.llm.accounting import Attempt, ResponseSource
from sotopia_are.llm.config import Endpoint
from sotopia_are.llm.request import LLMRequest, LLMResponse, Message
from sotopia_are.record import record_of_result
from sotopia_are.simulation.types import CompletedEvent
from sotopia_are.social import EpisodeSpec, Sink
from sotopia_are.storage.events import encode_event
from sotopia_are.studies import arate
from sotopia_are.studies.playing import play_episode

MODEL = "openai/bench-model"
API_BASE = "http://127.0.0.1:9/v1"  # never reached: the answers are made in this process


async def _answer(
    self: LLMSession,
    request: LLMRequest,
    endpoint: Endpoint,
    attempts: list[Attempt],
    added: list[Message],
) -> tuple[LLMResponse, ResponseSource, float, float]:
    """The simplest instance of the request's schema, at once (as the fake server)."""
    schema = request.params["response_format"]["json_schema"]["schema"]  # type: ignore[index,call-overload]
    text = json.dumps(instance(schema, schema.get("$defs", {})))
    return LLMResponse(text=text, prompt_tokens=500, completion_tokens=20), "network", 0.0, 0.0


class EncodingSink:
    """Encodes every event as the store writes it (and keeps nothing)."""

    def on_event(self, episode_id: str, event: CompletedEvent) -> None:
        encode_event(event)


def spec(index: int, turns: int) -> EpisodeSpec:
    return EpisodeSpec(
        episode_id=f"harvest-{index}",
        scenario="Two allotment neighbours divide a shared apple harvest.",
        agent_names=["Ines Moreau", "Kofi Mensah"],
        agent_backgrounds=["Ines bakes pies for the market.", "Kofi presses cider."],
        agent_goals=["Get at least 60% of the apples.", "Get the windfalls for cider."],
        max_turns=turns,
        max_stale_turns=turns,
    )


async def play(episodes: int, turns: int, first: int) -> tuple[float, int]:
    """CPU seconds and model calls of ``episodes`` episodes played one after another."""
    session = LLMSession(LLMConfig(api_base=API_BASE), retain_calls=False)
    judge = LLMJudge(MODEL, Rubric.load("sotopia_eval"), session=session)
    sinks: list[Sink] = [EncodingSink()]
    calls = session.call_count
    started = time.process_time()
    for index in range(first, first + episodes):
        episode = spec(index, turns)
        result = await play_episode(episode, llm_agents_for(episode, MODEL, session), sinks=sinks)
        record = record_of_result(result, models=dict.fromkeys(episode.agent_names, MODEL))
        await arate(record, judge, preflight=False)
    return time.process_time() - started, session.call_count - calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    LLMSession._answer = _answer  # type: ignore[method-assign]
    asyncio.run(play(1, args.turns, 0))  # warm-up: imports, templates, schemas
    per_call: list[float] = []
    for repeat in range(args.repeats):
        cpu, calls = asyncio.run(play(args.episodes, args.turns, (repeat + 1) * 10**6))
        per_call.append(cpu / calls)
        print(
            f"round {repeat + 1}: {calls} calls, {cpu:.2f} s CPU, {1e6 * cpu / calls:.0f} µs/call"
        )
    print(f"median {1e6 * statistics.median(per_call):.0f} µs CPU per call")


if __name__ == "__main__":
    main()
