"""Imported records are checked as played ones are built: scores in their dimensions'
ranges, actions by and for participants, a status that agrees with the events and the
turns. Every played record passes; every forged field is named."""

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sotopia_are.agents import ScriptedAgent
from sotopia_are.evaluation import GOAL_ONLY, AgentRating, DimensionScore, Evaluation
from sotopia_are.messages import AgentAction
from sotopia_are.record import (
    EpisodeRecord,
    RecordCheckError,
    Verdict,
    checked_import,
    load_record,
    record_of_result,
    record_problems,
)
from sotopia_are.social import EpisodeSpec, EpisodeStatus, run_episode

NAMES = ["Ana Lee", "Bo Chen", "Cy Diaz"]
SPEAK = st.builds(
    AgentAction,
    action_type=st.just("speak"),
    argument=st.sampled_from(["Hi.", "No.", "Fine, half each."]),
    to=st.none() | st.sampled_from([["Bo Chen"], ["Cy Diaz"], ["Bo Chen", "Cy Diaz"]]),
)
NOTHING = st.just(AgentAction(action_type="none", argument=""))


def _spec(turns: int, episode_id: str = "checked") -> EpisodeSpec:
    return EpisodeSpec(
        episode_id=episode_id,
        scenario="Three neighbours share a garden.",
        agent_names=NAMES,
        agent_backgrounds=["", "", ""],
        agent_goals=["the sunny plot", "the shed", "quiet"],
        max_turns=turns,
        max_stale_turns=turns,
    )


def _goal_verdict(goals: list[int], judge: str = "openai/judge") -> Verdict:
    ratings = [
        AgentRating.of(name, [DimensionScore.of("goal", 0, 10, [goal], ["why"])])
        for name, goal in zip(NAMES, goals, strict=True)
    ]
    evaluation = Evaluation(
        rubric="goal_only", model=judge, agent_names=NAMES, samples=1, valid_samples=1,
        ratings=ratings,
    )  # fmt: skip
    return Verdict(judge_model=judge, rubric=GOAL_ONLY.name, evaluation=evaluation)


def _played(turns: int = 2) -> EpisodeRecord:
    # Ana whispers to the others; everyone else speaks publicly.
    actions = {
        "Ana Lee": [AgentAction(action_type="speak", argument="psst", to=["Bo Chen"])] * turns,
        "Bo Chen": [AgentAction(action_type="speak", argument="Hello.")] * turns,
        "Cy Diaz": [AgentAction(action_type="none", argument="")] * turns,
    }
    agents = [ScriptedAgent(name, actions[name]) for name in NAMES]
    result = asyncio.run(run_episode(_spec(turns), agents))
    return record_of_result(result, models=dict.fromkeys(NAMES, "openai/m"))


RATED = _played().with_verdict(_goal_verdict([7, 3, 5]))


def _forged(record: EpisodeRecord, change: Any) -> EpisodeRecord:
    """``record`` with its JSON changed by ``change(document)`` (as a file could be)."""
    document = json.loads(record.to_json())
    change(document)
    return load_record(document)


def _dimension(document: dict[str, Any], agent: int = 0) -> dict[str, Any]:
    goal: dict[str, Any] = document["verdicts"][0]["evaluation"]["ratings"][agent]["dimensions"]
    return goal["goal"]


@st.composite
def played_records(draw: st.DrawFn) -> EpisodeRecord:
    turns = draw(st.integers(min_value=1, max_value=5))
    agents = []
    for name in NAMES:
        choices = SPEAK if name == "Ana Lee" else SPEAK | NOTHING
        actions = draw(st.lists(choices, min_size=turns, max_size=turns))
        agents.append(ScriptedAgent(name, actions))
    result = asyncio.run(run_episode(_spec(turns), agents))
    record = record_of_result(result)
    if record.status is EpisodeStatus.COMPLETE and draw(st.booleans()):
        goals = draw(st.lists(st.integers(0, 10), min_size=3, max_size=3))
        record = record.with_verdict(_goal_verdict(goals))
    return record


@given(played_records())
@settings(max_examples=30, deadline=None)
def test_every_played_record_passes_the_import_checks(record: EpisodeRecord) -> None:
    assert record_problems(record) == []
    assert record_problems(load_record(record.to_json())) == []
    assert checked_import(record) is record


FORGERIES = [
    pytest.param(
        lambda d: _dimension(d).update(scores=[12], mean=12.0, min=12, max=12),
        "verdicts[0].evaluation.ratings[0].dimensions.goal.scores[0]: 12 is outside goal's "
        "range 0..10",
        id="score-above-range",
    ),
    pytest.param(
        lambda d: _dimension(d, 1).update(scores=[-3], mean=-3.0, min=-3, max=-3),
        "ratings[1].dimensions.goal.scores[0]: -3 is outside goal's range 0..10",
        id="score-below-range",
    ),
    pytest.param(
        lambda d: _dimension(d).update(high=100, scores=[70], mean=70.0, min=70, max=70),
        "ratings[0].dimensions.goal: range 0..100, but rubric goal_only rates goal 0..10",
        id="range-widened",
    ),
    pytest.param(
        lambda d: _dimension(d).update(mean=9.5),
        "ratings[0].dimensions.goal.mean: 9.5 is not the mean of its scores (7)",
        id="mean-forged",
    ),
    pytest.param(
        lambda d: d["verdicts"][0]["evaluation"]["ratings"][0].update(overall=10.0),
        "ratings[0].overall: 10.0 is not the mean of its dimensions (7)",
        id="overall-forged",
    ),
    pytest.param(
        lambda d: d["verdicts"][0]["evaluation"]["ratings"][2].update(agent="Mallory"),
        "ratings[2].agent: 'Mallory' is not a participant (Ana Lee, Bo Chen, Cy Diaz)",
        id="rating-of-a-stranger",
    ),
    pytest.param(
        lambda d: d["events"][1]["action"]["args"][0].update(value="Mallory"),
        "events[1]: an action by 'Mallory', who is not a participant",
        id="action-by-a-stranger",
    ),
    pytest.param(
        lambda d: d["events"][0]["action"]["args"][3].update(value='["Mallory", "Bo Chen"]'),
        "events[0]: 'Ana Lee' addressed Mallory, not participants",
        id="whisper-to-a-stranger",
    ),
    pytest.param(
        lambda d: d.update(events=[]),
        "status: complete, but the episode has no events",
        id="complete-without-events",
    ),
    pytest.param(
        lambda d: d.update(turns_played=5),
        "turns_played: 5, but the events hold actions in turns 0..1",
        id="turns-more-than-played",
    ),
    pytest.param(
        lambda d: d.update(turns_played=1),
        "turns_played: 1, but the events hold actions in turns 0..1",
        id="turns-fewer-than-played",
    ),
    pytest.param(
        lambda d: d.update(status="failed", turns_played=0),
        "verdicts[0]: a verdict on a failed episode",
        id="verdict-on-a-failed-episode",
    ),
    pytest.param(
        lambda d: d.update(status="failed", turns_played=0, verdicts=[]),
        "turns_played: 0, but the events hold actions up to turn 1",
        id="failed-before-the-actions-it-holds",
    ),
    pytest.param(
        lambda d: d.update(failed_agent="Mallory"),
        "failed_agent: 'Mallory' is not a participant",
        id="failed-stranger",
    ),
    pytest.param(
        lambda d: d["models"].update(Mallory="openai/m"),
        "models: 'Mallory' is not a participant",
        id="model-of-a-stranger",
    ),
    pytest.param(
        lambda d: d.update(turns_played=-1),
        "turns_played: -1 is negative",
        id="negative-turns",
    ),
]


@pytest.mark.parametrize(("forge", "problem"), FORGERIES)
def test_a_forged_record_is_refused_naming_the_field(forge: Any, problem: str) -> None:
    forged = _forged(RATED, forge)
    assert problem in "\n".join(record_problems(forged))
    with pytest.raises(RecordCheckError, match="--lenient") as error:
        checked_import(forged)
    assert problem in str(error.value) and "episode checked:" in str(error.value)


def test_lenient_keeps_a_forged_record_flagged_and_the_flag_survives_json() -> None:
    forged = _forged(RATED, lambda d: d.update(turns_played=5))
    kept = checked_import(forged, lenient=True)
    assert kept.problems == ("turns_played: 5, but the events hold actions in turns 0..1",)
    assert load_record(kept.to_json()) == kept
    # Checking again adds nothing twice.
    assert checked_import(kept, lenient=True).problems == kept.problems
