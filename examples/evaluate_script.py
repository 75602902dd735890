"""Evaluate a human-written script: parse -> replay through the engine -> LLM judge.

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

from sotopia_are.agents import ScriptedAgent
from sotopia_are.evaluation import SOTOPIA_EVAL, LLMJudge, evaluate_script
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
        done = await evaluate_script(script, spec, judge, ScriptedAgent.from_script)
    print(done.episode.transcript())
    print(f"\nterminated: {done.response.terminated} ({done.termination.reason})")
    for name, rate in done.response.rates.items():
        assert rate is not None
        overall, scores = rate
        print(f"{name}: overall {overall:.2f}  {scores}")
    print(f"judge: {done.usage.calls} call(s), {done.usage.total_tokens} tokens")


if __name__ == "__main__":
    asyncio.run(main())
