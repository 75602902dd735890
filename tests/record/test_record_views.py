"""A record's views come from its events as ARE's format writes them, with no import of a
trace: they are the views the runner built while playing, entry for entry."""

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sotopia_are.messages import AgentAction
from sotopia_are.record import load_record, record_of_result
from sotopia_are.social import AgentTurn, CallRecord, EpisodeResult, EpisodeSpec, run_episode

NAMES = ["Mira", "Tomas", "Priya"]
TURNS = 6


def actions(name: str) -> st.SearchStrategy[list[AgentAction]]:
    others = [n for n in NAMES if n != name]
    # Now and then "Nobody", who is no participant: the app refuses the action (a failed
    # event in the log) and the episode fails there.
    to = st.one_of(
        st.none(),
        st.lists(st.sampled_from(others), min_size=1, unique=True),
        st.integers(0, 30).map(lambda n: ["Nobody"] if n == 0 else None),
    )
    action = st.builds(
        lambda kind, text, to: AgentAction(
            action_type=kind, argument="" if kind in ("none", "leave") else text, to=to
        ),
        st.sampled_from(["speak", "speak", "non-verbal communication", "action", "none", "leave"]),
        st.text(
            st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")), max_size=20
        ),
        to,
    )
    return st.lists(action, min_size=TURNS, max_size=TURNS)


ENV_EVENTS = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {
                "turn": st.integers(0, TURNS),
                "content": st.text(max_size=15),
                "to": st.one_of(
                    st.none(), st.lists(st.sampled_from(NAMES), min_size=1, unique=True)
                ),
            }
        ),
        st.fixed_dictionaries(
            {
                "turn": st.integers(0, TURNS),
                "kind": st.just("message"),
                "sender": st.just("Dee"),
                "content": st.text(max_size=15),
                "to": st.lists(st.sampled_from(NAMES), min_size=1, unique=True),
            }
        ),
    ),
    max_size=3,
)


class Playback:
    """Plays its lines in order, unchecked (a refused one is a failed event in the log)."""

    def __init__(self, name: str, lines: list[AgentAction]) -> None:
        self.name = name
        self.lines = list(lines)

    async def act(self, turn: AgentTurn) -> AgentAction:
        return self.lines.pop(0)

    def call_records(self) -> list[CallRecord]:
        return []


def play(spec: EpisodeSpec, lines: dict[str, list[AgentAction]]) -> EpisodeResult:
    return asyncio.run(run_episode(spec, [Playback(name, lines[name]) for name in NAMES]))


def street_party(episode_id: str, env_events: list[dict[str, Any]], **more: Any) -> EpisodeSpec:
    """The three neighbours' episode these tests play, with ``env_events`` and ``more``."""
    return EpisodeSpec.model_validate(
        {
            "episode_id": episode_id,
            "scenario": "Three neighbours plan a street party.",
            "agent_names": NAMES,
            "agent_backgrounds": ["a baker", "a teacher", "a nurse"],
            "agent_goals": ["music", "quiet", "food"],
            "max_turns": TURNS,
            "env_events": env_events,
            **more,
        }
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.fixed_dictionaries({name: actions(name) for name in NAMES}),
    env_events=ENV_EVENTS,
    policy=st.sampled_from(["round-robin", "simultaneous", "random"]),
    seed=st.integers(0, 5),
)
def test_a_records_views_are_the_runs(
    lines: dict[str, list[AgentAction]], env_events: list[dict[str, Any]], policy: str, seed: int
) -> None:
    spec = street_party("views-1", env_events, turn_policy=policy, seed=seed)
    result = play(spec, lines)
    record = record_of_result(result)
    for derived in (record, load_record(record.to_json())):
        assert derived.entries == result.entries
        assert derived.actions() == result.actions()
        assert derived.transcript() == result.transcript()
        for name in NAMES:
            assert derived.transcript(name) == result.transcript(name)
            assert derived.views.agents[name].entries == result.view(name).entries
