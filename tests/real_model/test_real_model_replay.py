"""Episodes on real models' recorded answers, replayed offline (runs in CI).

Each ``tests/data/real_model/*.jsonl`` is a recording that ``benchmarks/real_model.py
--record`` made against a real model; its ``.meta.json`` holds the model, the output mode,
the agents' and the judge's sampling, the episode specs and what the live run measured.
Replayed through the same agents, normalisation, repair and judge, every episode must end
as it did live — complete and rated, or failed with the same recorded reason — so a change
that would throw away a real model's usable answer, or score an unusable one, fails here.
Each replay's records must also equal ``records/NAME.jsonl`` (latencies aside): what the
recorded episodes became, so playing and rating keep giving the same records.
"""

import json
from pathlib import Path
from typing import Any

import pytest

import sotopia_are as sa
from sotopia_are.agents import llm_agents_for
from sotopia_are.evaluation import LLMJudge, Rubric
from sotopia_are.llm import LLMConfig, LLMSession, Sampling
from sotopia_are.record import EpisodeRecord
from sotopia_are.social import EpisodeSpec

DATA = Path(__file__).parents[1] / "data" / "real_model"
RECORDINGS = sorted(DATA.glob("*.jsonl"))
RECORDS = DATA / "records"


def test_there_are_real_recordings() -> None:
    assert RECORDINGS, f"no recordings in {DATA}"


@pytest.mark.parametrize("recording", RECORDINGS, ids=[p.stem for p in RECORDINGS])
async def test_recorded_real_episodes_replay_as_they_went_live(recording: Path) -> None:
    meta: dict[str, Any] = json.loads(recording.with_suffix(".meta.json").read_text("utf-8"))
    records = await replay(recording, meta)
    for record, live in zip(records, meta["episodes"], strict=True):
        assert (record.status, record.reason) == (live["status"], live["reason"])
        assert record.turns_played == live["turns"]
        # A failed episode is recorded with its reason and never given scores; a complete
        # one is rated, or carries the judge's failure.
        verdict = record.verdict
        assert (verdict is not None and verdict.rated) == live["rated"]
        assert (verdict is None) == (record.status == "failed")
        assert sum(c.normalized for c in record.calls) == live["agent_normalized"]
        assert sum(c.repaired for c in record.calls) == live["agent_repaired"]
        rates: Any = dict.fromkeys(record.spec.agent_names)
        if verdict is not None:
            assert sum(c.repaired for c in verdict.evaluation.calls) == live["judge_repaired"]
            assert list(verdict.evaluation.warnings) == live["judge_warnings"]
            rates = verdict.response().rates
        assert json.loads(json.dumps(rates)) == live["scores"]
    expected = (RECORDS / recording.name).read_text("utf-8").splitlines()
    assert [comparable(record) for record in records] == expected


async def replay(recording: Path, meta: dict[str, Any]) -> list[EpisodeRecord]:
    """The records of ``recording``'s episodes played and rated again on its answers."""
    session = LLMSession.replaying(recording, LLMConfig(output_mode=meta["output_mode"]))
    # The settings of the live run, sent again: a replay answers only the same requests.
    judge = LLMJudge(
        meta["judge_model"],
        Rubric.load(meta["rubric"]),
        session=session,
        sampling=Sampling.parse(meta["judge_sampling"]),
    )
    sampling = Sampling.parse(meta["sampling"])
    records = []
    for spec_data in meta["specs"]:
        spec = EpisodeSpec.model_validate(spec_data)
        agents = llm_agents_for(spec, meta["model"], session, sampling=sampling)
        records.append(
            await sa.arun(spec, agents, models=meta["model"], judge=judge, preflight=False)
        )
    assert session.replayer is not None and session.replayer.remaining == 0
    return records


def comparable(record: EpisodeRecord) -> str:
    """``record`` as JSON with every latency 0: the part of it a replay reproduces."""
    return json.dumps(_without_latency(record.model_dump(mode="json")))


def _without_latency(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: 0 if k == "latency_s" else _without_latency(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_latency(item) for item in value]
    return value


def test_some_recording_holds_complete_rated_episodes_of_every_scenario_played() -> None:
    rated = {
        live["episode"]
        for recording in RECORDINGS
        for live in json.loads(recording.with_suffix(".meta.json").read_text("utf-8"))["episodes"]
        if live["rated"]
    }
    assert {"real-bakery_negotiation-1", "real-garden_committee-1"} <= rated


if __name__ == "__main__":
    # Writes records/NAME.jsonl again, after recording NAME again (see the README).
    import asyncio

    RECORDS.mkdir(exist_ok=True)
    for path in RECORDINGS:
        data = json.loads(path.with_suffix(".meta.json").read_text("utf-8"))
        try:
            lines = [comparable(record) for record in asyncio.run(replay(path, data))]
        except AssertionError:
            print(f"{path.name}: the replay did not use every answer; record it again")
            continue
        (RECORDS / path.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
