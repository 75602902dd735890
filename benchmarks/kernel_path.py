"""CPU of the kernel's event path per agent turn: the runner, the kernel, the views, the
store's encoding of each event and the record, without any model or store.

Two agents that answer at once (the same speech every time they are asked in a turn)
play E two-agent episodes of 20 turns through ``play_episode``, as a batch worker plays
them; a sink encodes every event as the store writes it (``storage.events.event_entry``),
and each episode's record is built (``record_of_result``). The garbage collector is set
as in a batch worker (``gc.freeze()``, 10,000 allocations between young collections).
Prints the process CPU time per turn; count instructions with valgrind for figures that
other load does not change:
``PYTHONHASHSEED=0 valgrind --tool=cachegrind --cache-sim=no python
benchmarks/kernel_path.py N`` for N = 5 and 25, (I(25) - I(5)) / 400.

Run: ``python benchmarks/kernel_path.py [EPISODES]`` (default 300).
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from per_call import spec

from sotopia_are.messages import AgentAction
from sotopia_are.record import record_of_result
from sotopia_are.simulation.types import CompletedEvent
from sotopia_are.social import AgentTurn
from sotopia_are.storage.events import event_entry
from sotopia_are.studies.playing import play_episode

TURNS = 20
SPEECH = [
    AgentAction(action_type="speak", argument=f"Turn {n}: shall we split it?") for n in range(TURNS)
]


class InstantAgent:
    """Says the turn's line at once."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def act(self, turn: AgentTurn) -> AgentAction:
        return SPEECH[turn.turn_number]

    def call_records(self) -> tuple[()]:
        return ()


class EncodingSink:
    """Encodes every event as the store writes it (and keeps nothing)."""

    def on_event(self, episode_id: str, event: CompletedEvent) -> None:
        event_entry(event)


async def play(episodes: int) -> None:
    sinks = [EncodingSink()]
    for index in range(episodes):
        episode = spec(index, TURNS)
        agents = [InstantAgent(name) for name in episode.agent_names]
        result = await play_episode(episode, agents, sinks=sinks)
        record_of_result(result, models={})


def main() -> None:
    episodes = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    asyncio.run(play(1))  # warm-up: imports, schemas
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)
    started = time.process_time()
    asyncio.run(play(episodes))
    cpu = time.process_time() - started
    print(f"{episodes} episodes: {1e6 * cpu / (episodes * TURNS):.1f} µs CPU per turn")


if __name__ == "__main__":
    main()
