"""Evaluate a human-written script: parse -> replay through the engine -> its record -> LLM judge.

The judge is a local OpenAI-compatible server with scripted answers
(``sotopia_are.testing.LocalLLMServer``), so this runs offline; give ``LLMJudge`` a real
model (and drop the server) to rate for real. The context of the script (scenario,
backgrounds, goals) is ``examples/scenarios/bakery_negotiation.json``. The same from the
command line: ``sotopia-are evaluate --script examples/scripts/bakery_negotiation.txt
--spec examples/scenarios/bakery_negotiation.json --model MODEL``. Run:
``python examples/evaluate_script.py``.
"""

import asyncio
import json
from pathlib import Path

import sotopia_are as sa
from sotopia_are.evaluation import SOTOPIA_EVAL, LLMJudge
from sotopia_are.llm import LLMConfig, LLMSession
from sotopia_are.social import EpisodeSpec
from sotopia_are.testing import LocalLLMServer

EXAMPLES = Path(__file__).parent


def judge_answer(names: list[str]) -> str:
    """What the scripted judge answers: a score and a reason per agent and dimension."""
    return json.dumps(
        {
            name: {
                d.name: {
                    "reasoning": f"{name}, {d.name}: see the deal they struck.",
                    "score": d.high if d.low >= 0 else 0,
                }
                for d in SOTOPIA_EVAL.dimensions
            }
            for name in names
        }
    )


async def main() -> None:
    spec = EpisodeSpec.model_validate_json(
        (EXAMPLES / "scenarios" / "bakery_negotiation.json").read_text(encoding="utf-8")
    )
    script = (EXAMPLES / "scripts" / "bakery_negotiation.txt").read_text(encoding="utf-8")
    with LocalLLMServer(lambda request: judge_answer(spec.agent_names)) as server:
        session = LLMSession(LLMConfig(api_base=server.url, api_key="sk-local"))
        judge = LLMJudge("openai/test-model", session=session)
        record = await sa.arate_script(script, judge, spec)
    assert record.verdict is not None
    response = record.verdict.response()  # Sotopia's ScriptEnvironmentResponse
    print(record.transcript())
    print(f"\nterminated: {response.terminated} ({record.verdict.termination_reason})")
    for name, rate in response.rates.items():
        assert rate is not None
        overall, scores = rate
        print(f"{name}: overall {overall:.2f}  {scores}")
    # Scripted agents call no model: every call is the judge's.
    print(f"judge: {record.usage.calls} call(s), {record.usage.total_tokens} tokens")


if __name__ == "__main__":
    asyncio.run(main())
