"""Sinks are told when an episode starts, before its first event."""

from collections.abc import Sequence

from sotopia_are.agents import ScriptedAgent
from sotopia_are.messages import AgentAction
from sotopia_are.simulation.types import CompletedEvent
from sotopia_are.social import EpisodeResult, EpisodeSpec, run_episode, run_episodes


class Journal:
    """A sink that writes down what it is told, in order."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, str]] = []

    def on_episode_start(self, episode_id: str, spec: EpisodeSpec) -> None:
        assert spec.episode_id == episode_id
        self.entries.append(("start", episode_id))

    def on_event(self, episode_id: str, event: CompletedEvent) -> None:
        self.entries.append(("event", episode_id))

    def on_episode_end(self, episode_id: str, result: EpisodeResult) -> None:
        self.entries.append(("end", episode_id))


def spec(episode_id: str) -> EpisodeSpec:
    return EpisodeSpec(
        episode_id=episode_id,
        scenario="Two neighbours agree on a fence.",
        agent_names=["Ada", "Bo"],
        agent_backgrounds=["", ""],
        agent_goals=["A low fence", "A high fence"],
        max_turns=2,
    )


def agents(_: EpisodeSpec) -> Sequence[ScriptedAgent]:
    return [
        ScriptedAgent("Ada", [AgentAction(action_type="speak", argument="Low?")]),
        ScriptedAgent("Bo", [AgentAction(action_type="speak", argument="High.")]),
    ]


async def test_start_comes_before_every_event_and_end_after() -> None:
    journal = Journal()
    await run_episode(spec("one"), agents(spec("one")), sinks=[journal])
    assert journal.entries == [("start", "one"), ("event", "one"), ("event", "one"), ("end", "one")]


async def test_every_episode_of_a_batch_is_started_once() -> None:
    journal = Journal()
    await run_episodes([spec("a"), spec("b")], agents, sinks=[journal])
    for episode_id in ("a", "b"):
        mine = [kind for kind, of in journal.entries if of == episode_id]
        assert mine == ["start", "event", "event", "end"]
