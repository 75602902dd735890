"""LLM vs LLM: two LLMAgents negotiate, against a local OpenAI-compatible server.

The server (``sotopia_are.testing.LocalLLMServer``) answers with scripted replies, so the
example runs offline; point ``LLMConfig`` at a real endpoint (or set ``model`` to any
litellm model) to play it with real models. Run: ``python examples/llm_vs_llm.py``.
"""

import asyncio
import json

from sotopia_are.agents import llm_agents_for
from sotopia_are.llm import LLMConfig, LLMSession
from sotopia_are.record import record_of_result
from sotopia_are.social import EpisodeSpec, run_episode
from sotopia_are.testing import LocalLLMServer

REPLIES = [
    ("speak", "Hi Rafa! I'd love to rent your spare room for the summer. Would 400 a month work?"),
    ("speak", "Hello Lena. The room is usually 550, and it comes with a bike."),
    ("non-verbal communication", "winces and looks at her budget spreadsheet"),
    ("speak", "I could do 500 if you water the plants while I travel in July."),
    ("speak", "Deal: 500 and plant duty. When can I move in?"),
    ("leave", ""),
]


async def main() -> None:
    spec = EpisodeSpec(
        episode_id="room-rental",
        scenario="A student asks a neighbour about renting his spare room for the summer.",
        agent_names=["Lena Fischer", "Rafa Costa"],
        agent_backgrounds=[
            "Lena is an exchange student on a tight budget.",
            "Rafa travels for work every July and has a room to spare.",
        ],
        agent_goals=[
            "Rent the room for at most 450 a month.",
            "Get at least 500 a month and someone to water the plants.",
        ],
        max_turns=10,
    )
    with LocalLLMServer() as server:
        server.enqueue(*(json.dumps({"action_type": t, "argument": a}) for t, a in REPLIES))
        session = LLMSession(LLMConfig(api_base=server.url, api_key="sk-local"))
        agents = llm_agents_for(spec, "openai/test-model", session)
        result = await run_episode(spec, agents)
    print(result.transcript())
    print(f"\nended: {result.reason} ({result.status})")
    usage = record_of_result(result).usage  # the episode's record: its events and calls
    print(f"{usage.calls} model calls, {usage.total_tokens} tokens")


if __name__ == "__main__":
    asyncio.run(main())
