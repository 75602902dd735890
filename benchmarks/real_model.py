"""Episodes against a real model: do they complete, are they rated, what needed fixing?

Plays LLM-vs-LLM episodes of the example scenarios (``examples/scenarios/``) against the
model at ``--api-base`` (any OpenAI-compatible server: llama.cpp, vLLM, Ollama…) or any
litellm model, rates each with the judge (``--judge-model``, default the same model), and
prints one row per episode: status, turns, the actions by kind, the answers accepted after
normalising their form or after asking again, failed calls, judge warnings and time.

With ``--record FILE`` every answered request is recorded (``LLMSession.recording``), and
``FILE`` with ``.meta.json`` instead of ``.jsonl`` holds what a replay needs (model, output
mode, specs) and the numbers measured; ``tests/real_model/test_real_model_replay.py`` replays
such recordings offline. Run::

    python benchmarks/real_model.py --model openai/qwen15 --api-base http://127.0.0.1:8089/v1 \\
        [--scenario bakery_negotiation --scenario garden_committee] [--repeat 1] \\
        [--max-turns 12] [--output-mode auto] [--record tests/data/real_model/qwen15.jsonl] \\
        [--sampling temperature=0.7,seed=1] [--judge-sampling temperature=0]

``--sampling`` is the agents' (default: the server's own settings), ``--judge-sampling``
the judge's (default: ``DEFAULT_JUDGE_SAMPLING``, temperature 0); both are written as
``Sampling.parse`` reads them and kept in the ``.meta.json``, so a replay sends the same.

The model and server may also come from ``SOTOPIA_ARE_TEST_MODEL`` and
``SOTOPIA_ARE_TEST_API_BASE``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import sotopia_are as sa
from sotopia_are.agents import llm_agents_for
from sotopia_are.evaluation import LLMJudge, Rubric
from sotopia_are.llm import LLMConfig, LLMSession, Sampling
from sotopia_are.record import EpisodeRecord
from sotopia_are.social import EpisodeSpec

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "scenarios"
MODEL_ENV, API_BASE_ENV = "SOTOPIA_ARE_TEST_MODEL", "SOTOPIA_ARE_TEST_API_BASE"


def episode_specs(scenarios: list[str], repeat: int, max_turns: int) -> list[EpisodeSpec]:
    """Each scenario ``repeat`` times, each run with its own id and at most ``max_turns``."""
    specs = []
    for name in scenarios:
        base = json.loads((EXAMPLES / f"{name}.json").read_text(encoding="utf-8"))
        for number in range(1, repeat + 1):
            specs.append(
                EpisodeSpec.model_validate(
                    {**base, "episode_id": f"real-{name}-{number}", "max_turns": max_turns}
                )
            )
    return specs


def row(record: EpisodeRecord, seconds: float) -> dict[str, Any]:
    """What one episode measured."""
    kinds = collections.Counter(action.action_type for _, action in record.actions())
    verdict = record.verdict
    judge_calls = verdict.evaluation.calls if verdict is not None else []
    return {
        "episode": record.episode_id,
        "status": record.status,
        "reason": record.reason,
        "turns": record.turns_played,
        "actions": dict(kinds),
        "agent_calls": len(record.calls),
        "agent_normalized": sum(c.normalized for c in record.calls),
        "agent_repaired": sum(c.repaired for c in record.calls),
        "agent_failed": sum(not c.ok for c in record.calls),
        "judge_normalized": sum(c.normalized for c in judge_calls),
        "judge_repaired": sum(c.repaired for c in judge_calls),
        "rated": verdict is not None and verdict.rated,
        "judge_warnings": list(verdict.evaluation.warnings) if verdict is not None else [],
        "scores": rates(record),
        "seconds": round(seconds, 1),
    }


def rates(record: EpisodeRecord) -> dict[str, Any]:
    """Sotopia's rates of each agent: ``(overall, scores)`` by the judge, None unrated."""
    if record.verdict is None:  # a failed episode is not rated
        return dict.fromkeys(record.spec.agent_names)
    return dict(record.verdict.response().rates)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=os.environ.get(MODEL_ENV))
    parser.add_argument("--api-base", default=os.environ.get(API_BASE_ENV))
    parser.add_argument("--api-key", default=os.environ.get("SOTOPIA_ARE_API_KEY"))
    parser.add_argument("--judge-model", default=None)
    parser.add_argument("--scenario", action="append", default=None)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--max-turns", type=int, default=12)
    parser.add_argument("--record", type=Path, default=None)
    parser.add_argument(
        "--output-mode", choices=["auto", "json_schema", "json_object", "prompt"], default="auto"
    )
    parser.add_argument("--rubric", default="sotopia_eval")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per request")
    parser.add_argument("--sampling", type=Sampling.parse, default=Sampling())
    parser.add_argument("--judge-sampling", type=Sampling.parse, default=None)
    args = parser.parse_args()
    if not args.model:
        parser.error(f"give --model (or set {MODEL_ENV})")
    scenarios = args.scenario or ["bakery_negotiation"]
    specs = episode_specs(scenarios, args.repeat, args.max_turns)
    config = LLMConfig(
        api_base=args.api_base,
        api_key=args.api_key,
        max_concurrency=1,
        output_mode=args.output_mode,
        timeout_s=args.timeout,
    )
    session = LLMSession.recording(args.record, config) if args.record else LLMSession(config)
    judge = LLMJudge(
        args.judge_model or args.model,
        Rubric.load(args.rubric),
        session=session,
        sampling=args.judge_sampling,
    )
    rows = []
    for spec in specs:
        started = time.perf_counter()
        agents = llm_agents_for(spec, args.model, session, sampling=args.sampling)
        # No preflight: a recording holds the episodes' requests only.
        record = await sa.arun(spec, agents, models=args.model, judge=judge, preflight=False)
        rows.append(row(record, time.perf_counter() - started))
        print(json.dumps(rows[-1]), flush=True)
        print(record.transcript(), flush=True)
    session.close()
    usage = session.usage()
    summary = {
        "episodes": len(rows),
        "complete": sum(r["status"] == "complete" for r in rows),
        "rated": sum(r["rated"] for r in rows),
        "calls": usage.calls,
        "normalized_calls": usage.normalized_calls,
        "repaired_calls": usage.repaired_calls,
        "failed_calls": usage.failed_calls,
        "with_judge_warnings": sum(bool(r["judge_warnings"]) for r in rows),
    }
    print(json.dumps(summary))
    if args.record:
        meta = {
            "model": args.model,
            "judge_model": judge.model,
            "rubric": args.rubric,
            "sampling": str(args.sampling),
            "judge_sampling": str(judge.sampling),
            # The mode the answers came in (auto's choice, after any fallback).
            "output_mode": next(c.output_mode for c in session.calls if c.ok),
            "specs": [spec.model_dump(mode="json") for spec in specs],
            "episodes": rows,
            "summary": summary,
        }
        meta_path = args.record.with_suffix(".meta.json")
        meta_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return 0 if summary["rated"] == summary["episodes"] else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
