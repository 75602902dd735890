"""Sotopia's side of ``throughput.py``: the same batch, played by Sotopia 0.1.5.

Run by the Python of a SEPARATE virtualenv that has Sotopia installed (it imports
``sotopia``, never ``sotopia_are``). Nothing of theirs is replaced: the batch is built as
their own benchmark command builds one (``sotopia/cli/benchmark/benchmark.py``) and run by
their ``run_async_server``:

* E episodes of one scenario, the one ``throughput.write_specs`` writes (the apple
  harvest; Ines Moreau and Kofi Mensah, their backgrounds as the profiles' public info,
  their goals as the environment's goals);
* each a ``ParallelSotopiaEnv`` with ``action_order="round-robin"``, their
  ``RuleBasedTerminatedEvaluator(max_turn_number=T, max_stale_turn=2)`` (their default is
  T = 20) and, as terminal evaluator, their ``EpisodeLLMEvaluator`` with
  ``EvaluationForAgents[SotopiaDimensions]`` (0.1.5's LLM judge: the defaults of
  ``run_async_server``), with two of their ``LLMAgent``s;
* all E episodes passed to one ``run_async_server(env_agent_combo_list=...)`` call, which
  gathers them at once (``asyncio.gather`` of ``arun_one_episode``), with
  ``push_to_db=True``: every episode's ``EpisodeLog`` is saved, as ours are stored. Their
  default store is Redis through redis-om's ``JsonModel``, which needs the RedisJSON
  module (redis-stack); Sotopia 0.1.5's own ``SOTOPIA_STORAGE_BACKEND=local`` (one JSON
  file per record under ``~/.sotopia/data``) needs none, and is what this script uses
  (set it, and ``HOME``, before running; it defaults to ``local`` here).

Round-robin, one agent acts per turn (the other's turn is ``none``, no model call), so an
episode makes T agent calls and one judge call: E x (T + 1), as ours.

Every call goes to ``custom/bench-model@URL``: Sotopia 0.1.5's way of naming an
OpenAI-compatible server (``generation_utils/generate.py`` turns it into litellm's model
``openai/bench-model`` with ``base_url=URL`` and ``CUSTOM_API_KEY`` as the key).

Their console log (``sotopia.generation`` logs every generated result at INFO through a
``rich`` handler) is silenced unless ``--their-logs``: a batch user would silence it, and
it only adds to their time.

Prints one JSON line: the episodes run, the agents' spoken turns, the model calls the
server counted (its ``/stats``, when the server is ``benchmarks/fake_openai_server.py``;
else null), the seconds spent building the E environments and agents, running the
episodes (``run_async_server``), stopping litellm's logging worker (``stop_litellm_worker``,
with the count of logging callbacks it dropped), and from before Sotopia's imports to the
end (``throughput.py`` times the whole process from outside, and reads the stored logs
back after it, so that checking them costs Sotopia nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import time
import urllib.request
from importlib.metadata import version
from pathlib import Path
from typing import Any

SCENARIO = "Two allotment neighbours divide a shared apple harvest."
PEOPLE = [
    ("Ines", "Moreau", "Ines bakes pies for the market.", "Get at least 60% of the apples."),
    ("Kofi", "Mensah", "Kofi presses cider.", "Get the windfalls for cider."),
]


def combos(episodes: int, turns: int, model: str) -> list[tuple[Any, list[Any]]]:
    """E (environment, agents) pairs, as their benchmark command builds them."""
    from sotopia.agents import LLMAgent
    from sotopia.database import AgentProfile, EnvironmentProfile, SotopiaDimensions
    from sotopia.envs import ParallelSotopiaEnv
    from sotopia.envs.evaluators import (
        EpisodeLLMEvaluator,
        EvaluationForAgents,
        RuleBasedTerminatedEvaluator,
    )

    profiles = [
        AgentProfile(first_name=first, last_name=last, public_info=background)
        for first, last, background, _ in PEOPLE
    ]
    env_profile = EnvironmentProfile(
        scenario=SCENARIO, agent_goals=[goal for *_, goal in PEOPLE], tag="throughput"
    )
    for record in (env_profile, *profiles):
        record.save()  # their records, stored as the episode logs point at them
    pairs = []
    for _ in range(episodes):
        env = ParallelSotopiaEnv(
            env_profile=env_profile,
            model_name=model,
            action_order="round-robin",
            evaluators=[RuleBasedTerminatedEvaluator(max_turn_number=turns, max_stale_turn=2)],
            terminal_evaluators=[
                EpisodeLLMEvaluator(model, EvaluationForAgents[SotopiaDimensions]),
            ],
        )
        agents = [LLMAgent(agent_profile=profile, model_name=model) for profile in profiles]
        pairs.append((env, agents))
    return pairs


def server_calls(api_base: str) -> int | None:
    """The requests the fake server counted, or None when it is not that server."""
    root = api_base.rsplit("/v1", 1)[0]
    with (
        contextlib.suppress(OSError, ValueError, KeyError),
        urllib.request.urlopen(f"{root}/stats", timeout=10) as answer,
    ):
        return int(json.loads(answer.read())["requests"])
    return None


async def stop_litellm_worker() -> int:
    """Stops litellm's logging worker while the loop still runs, dropping the logging
    callbacks still queued (their count is returned).

    Left to ``asyncio.run``'s shutdown, the worker (litellm 1.80.0, the newest that Sotopia
    0.1.5's ``openai<2`` allows) is cancelled while it runs its queue one item at a time
    inside ``asyncio.wait_for``, which on Python 3.11 loses a cancellation that arrives as
    the item finishes: the worker then waits on its queue for ever and the process hangs
    after its last episode (seen at 100 episodes). Had it been cancelled cleanly, litellm
    would run up to 200 more items (5 s at most) and as many again at exit, dropping the
    rest; running the whole queue instead took 72 s at 1,000 episodes on a loaded machine.
    Dropping every queued item, then cancelling the worker once it waits on the empty
    queue (where a cancellation cannot be lost), costs Sotopia less than either."""
    from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER as worker

    queue, task = worker._queue, worker._worker_task
    if queue is None or task is None:
        return 0
    dropped = 0
    while not queue.empty():
        queue.get_nowait()["coroutine"].close()  # never run: no "never awaited" warning
        queue.task_done()
        dropped += 1
    while not task.done() and not queue._getters:  # type: ignore[attr-defined]
        await asyncio.sleep(0.01)  # the item it is running, if any, ends
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return dropped


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from sotopia.messages import AgentAction
    from sotopia.samplers import BaseSampler
    from sotopia.server import run_async_server

    model = f"custom/bench-model@{args.api_base}"
    began = time.perf_counter()
    pairs = combos(args.episodes, args.turns, model)
    setup_s = time.perf_counter() - began
    began = time.perf_counter()
    results = await run_async_server(
        sampler=BaseSampler(),
        env_agent_combo_list=pairs,
        push_to_db=True,
        tag=args.tag,
    )
    episodes_s = time.perf_counter() - began
    began = time.perf_counter()
    dropped = await stop_litellm_worker()
    stop_s = time.perf_counter() - began
    spoken = sum(
        1
        for messages in results
        for sender, _, message in messages
        if isinstance(message, AgentAction) and message.action_type != "none"
    )
    return {
        "episodes": len(results),
        "spoken_turns": spoken,
        "calls": server_calls(args.api_base),
        "setup_s": setup_s,
        "episodes_s": episodes_s,
        "stop_s": stop_s,
        "logging_dropped": dropped,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--api-base", required=True, help="e.g. http://127.0.0.1:PORT/v1")
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--tag", default="bench-sotopia")
    parser.add_argument("--their-logs", action="store_true", help="keep their console log")
    args = parser.parse_args()
    started = time.perf_counter()
    os.environ.setdefault("SOTOPIA_STORAGE_BACKEND", "local")
    os.environ.setdefault("CUSTOM_API_KEY", "sk-bench")
    import sotopia.generation_utils.generate  # noqa: F401  (adds their handler, on import)

    if not args.their_logs:
        for name in ("sotopia.generation", "sotopia", "evaluators"):
            logging.getLogger(name).handlers.clear()
            logging.getLogger(name).setLevel(logging.WARNING)
    row = asyncio.run(run(args))
    row["sotopia"] = version("sotopia")
    row["store"] = str(Path("~/.sotopia/data").expanduser())
    row["wall_s"] = time.perf_counter() - started  # from before Sotopia's imports
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
