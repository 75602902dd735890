"""Episodes on real models' recorded answers, replayed offline (runs in CI).

Each ``tests/data/real_model/*.jsonl`` is a recording that ``benchmarks/real_model.py
--record`` made against a real model; its ``.meta.json`` holds the model, the output mode,
the agents' and the judge's sampling, the episode specs and what the live run measured.
Replayed through the same agents, normalisation, repair and judge, every episode must end
as it did live — complete and rated, or failed with the same recorded reason — so a change
that would throw away a real model's usable answer, or score an unusable one, fails here.
"""

import json
from pathlib import Path
from typing import Any

import pytest

from sotopia_are.agents import llm_agents_for
from sotopia_are.evaluation import LLMJudge, Rubric, run_evaluated_episode
from sotopia_are.llm import LLMConfig, LLMSession, Sampling
from sotopia_are.social import EpisodeSpec

DATA = Path(__file__).parents[1] / "data" / "real_model"
RECORDINGS = sorted(DATA.glob("*.jsonl"))


def test_there_are_real_recordings() -> None:
    assert RECORDINGS, f"no recordings in {DATA}"


@pytest.mark.parametrize("recording", RECORDINGS, ids=[p.stem for p in RECORDINGS])
async def test_recorded_real_episodes_replay_as_they_went_live(recording: Path) -> None:
    meta: dict[str, Any] = json.loads(recording.with_suffix(".meta.json").read_text("utf-8"))
    session = LLMSession.replaying(recording, LLMConfig(output_mode=meta["output_mode"]))
    # The settings of the live run, sent again: a replay answers only the same requests.
    judge = LLMJudge(
        meta["judge_model"],
        Rubric.load(meta["rubric"]),
        session=session,
        sampling=Sampling.parse(meta["judge_sampling"]),
    )
    sampling = Sampling.parse(meta["sampling"])
    for spec_data, live in zip(meta["specs"], meta["episodes"], strict=True):
        spec = EpisodeSpec.model_validate(spec_data)
        agents = llm_agents_for(spec, meta["model"], session, sampling=sampling)
        evaluated = await run_evaluated_episode(spec, agents, judge)
        episode, evaluation = evaluated.episode, evaluated.evaluation
        assert (episode.status, episode.reason) == (live["status"], live["reason"])
        assert episode.turns_played == live["turns"]
        # A failed episode is recorded with its reason and never given scores; a complete
        # one is rated, or carries the judge's failure.
        assert (evaluation is not None and not evaluation.failed) == live["rated"]
        assert (evaluation is None) == (episode.status == "failed")
        calls = [c for agent_calls in episode.call_records.values() for c in agent_calls]
        assert sum(c.normalized for c in calls) == live["agent_normalized"]
        assert sum(c.repaired for c in calls) == live["agent_repaired"]
        if evaluation is not None:
            assert sum(c.repaired for c in evaluation.calls) == live["judge_repaired"]
            assert list(evaluation.warnings) == live["judge_warnings"]
        rates = json.loads(json.dumps(evaluated.response.rates))
        assert rates == live["scores"]
    assert session.replayer is not None and session.replayer.remaining == 0


def test_some_recording_holds_complete_rated_episodes_of_every_scenario_played() -> None:
    rated = {
        live["episode"]
        for recording in RECORDINGS
        for live in json.loads(recording.with_suffix(".meta.json").read_text("utf-8"))["episodes"]
        if live["rated"]
    }
    assert {"real-bakery_negotiation-1", "real-garden_committee-1"} <= rated
