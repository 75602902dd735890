"""CPU of one model call's path alone: ``LLMAgent.act`` to the socket and back.

An agent's turn is rendered, sent over the HTTP transport to the fake OpenAI-compatible
server (``fake_openai_server.py``, in its own process, so its work is not counted), and
its answer parsed and recorded: the LLM layer's whole path (session, retries, watchdog,
limits, transport, the lean HTTP client, accounting), without the kernel, the store or
the judge. ``--tasks`` agents play at once, each ``--calls`` turns, each turn's
transcript a little longer (as in an episode of the throughput batch).

Run the server first (``python benchmarks/fake_openai_server.py --port 47111 --latency
0.05``), then ``python benchmarks/llm_path.py [--tasks 64] [--calls 20]``: it prints
the process CPU time per call. For instructions, run it under valgrind's cachegrind for
two sizes and divide the difference by the calls between them (under valgrind the wall
clock's timers are a smaller part with more calls in flight, so keep ``--tasks``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource

from sotopia_are.agents import LLMAgent
from sotopia_are.llm import LLMConfig, LLMSession
from sotopia_are.messages import Observation, ScriptBackground
from sotopia_are.messages.action import ActionType
from sotopia_are.social.protocol import AgentTurn
from sotopia_are.studies.workers import WORKER_GC_THRESHOLD

MODEL = "openai/bench-model"
ACTIONS: tuple[ActionType, ...] = ("none", "speak", "non-verbal communication", "action", "leave")
NAMES = ("Ines Moreau", "Kofi Mensah")
BACKGROUND = ScriptBackground(
    scenario="Two allotment neighbours divide a shared apple harvest.",
    agent_names=list(NAMES),
    agent_backgrounds=["Ines bakes pies for the market.", "Kofi presses cider."],
    agent_goals=["Get at least 60% of the apples.", "Get the windfalls for cider."],
)


def turn(number: int) -> AgentTurn:
    transcript = "\n".join(
        f'Turn #{i}: {NAMES[i % 2]} said: "Shall we split them by weight, then?"'
        for i in range(number)
    )
    return AgentTurn(
        agent_name=NAMES[0],
        turn_number=number,
        participants=NAMES,
        background=BACKGROUND,
        observation=Observation(last_turn="", turn_number=number, available_actions=list(ACTIONS)),
        transcript=transcript,
        available_actions=ACTIONS,
    )


async def play(session: LLMSession, index: int, turns: list[AgentTurn]) -> None:
    agent = LLMAgent(NAMES[0], MODEL, session.scoped(f"episode-{index}"))
    for one in turns:
        await agent.act(one)


async def main(tasks: int, calls: int, api_base: str, transport: str) -> None:
    session = LLMSession(
        LLMConfig(api_base=api_base, transport=transport),  # type: ignore[arg-type]
        retain_calls=False,
    )
    turns = [turn(n) for n in range(1, calls + 1)]
    await play(session, -1, turns[:2])  # warm-up: imports, the connection, the slots
    # The collector as a batch worker tunes it (studies.workers).
    gc.freeze()
    gc.set_threshold(WORKER_GC_THRESHOLD, *gc.get_threshold()[1:])
    warm = session.call_count
    before = resource.getrusage(resource.RUSAGE_SELF)
    await asyncio.gather(*(play(session, i, turns) for i in range(tasks)))
    after = resource.getrusage(resource.RUSAGE_SELF)
    made = session.call_count - warm
    user = (after.ru_utime - before.ru_utime) / made * 1e6
    system = (after.ru_stime - before.ru_stime) / made * 1e6
    total = user + system
    print(f"{made} calls: {total:.0f} µs of CPU per call ({user:.0f} user, {system:.0f} system)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=64)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--api-base", default="http://127.0.0.1:47111/v1")
    parser.add_argument("--transport", default="auto")
    args = parser.parse_args()
    asyncio.run(main(args.tasks, args.calls, args.api_base, args.transport))
