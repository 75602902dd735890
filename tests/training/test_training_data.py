"""Training data from stored episodes: SFT examples are the exact messages an agent was
sent and its action, filtered by tag, model, agent and judge score; preference pairs join
differently rated actions for the same prompt; both load with Hugging Face ``datasets``
and carry a manifest; the CLI writes the same files."""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import datasets
import pytest
from training_support import MODEL, NAMES, VariedRule, bakery
from typer.testing import CliRunner

import sotopia_are as sa
from sotopia_are.agents import ScriptedAgent
from sotopia_are.cli import app
from sotopia_are.messages import AgentAction
from sotopia_are.storage import EmptySelectionError, EpisodeStore
from sotopia_are.testing import LocalLLMServer, ReplyLike, schema_rule
from sotopia_are.training import (
    TrainingManifest,
    export_preferences,
    export_sft,
    manifest_path,
)


async def played(
    server: LocalLLMServer, store: EpisodeStore, count: int, tag: str
) -> list[sa.EpisodeRecord]:
    """``count`` rated episodes of the same scenario, stored with ``tag``."""
    config = sa.LLMConfig(api_base=server.url)
    judge = sa.LLMJudge("openai/judge", config=config)
    return [
        await sa.arun(
            bakery(f"{tag}-{n}"),
            models=MODEL,
            judge=judge,
            store=store,
            config=config,
            tag=tag,
            scenario_id="bakery",
        )
        for n in range(count)
    ]


def load(path: Path) -> datasets.Dataset:
    cache = path.parent / "datasets-cache"  # not the user's ~/.cache
    return datasets.load_dataset("json", data_files=str(path), split="train", cache_dir=str(cache))


async def test_sft_examples_are_the_messages_sent_and_the_action_taken(
    llm_server: LocalLLMServer, store: EpisodeStore, tmp_path: Path
) -> None:
    llm_server.rule = VariedRule()
    records = await played(llm_server, store, 3, "study")
    out = tmp_path / "sft.jsonl"
    manifest = export_sft(store, out, tag="study")
    rows = load(out)
    assert len(rows) == manifest.examples == sum(len(r.calls) for r in records) == 12
    first = records[0].calls[0]
    assert rows[0]["messages"][:-1] == [m.model_dump() for m in first.messages]
    assert json.loads(rows[0]["messages"][-1]["content"]) == first.parsed
    assert rows[0]["messages"][-1]["role"] == "assistant"
    assert (rows[0]["episode_id"], rows[0]["agent"], rows[0]["model"]) == (
        "study-0",
        NAMES[0],
        MODEL,
    )
    assert rows[0]["scores"] == records[0].scores[NAMES[0]]
    on_disk = TrainingManifest.model_validate_json(manifest_path(out).read_text())
    assert on_disk == manifest
    assert (manifest.source_tag, manifest.episodes_read, manifest.episodes_used) == ("study", 3, 3)
    assert manifest.judges == [records[0].verdict.key]  # type: ignore[union-attr]


async def test_sft_keeps_only_agents_at_the_minimum_scores(
    llm_server: LocalLLMServer, store: EpisodeStore, tmp_path: Path
) -> None:
    llm_server.rule = VariedRule()
    records = await played(llm_server, store, 4, "study")
    goals = {r.episode_id: r.scores[NAMES[1]]["goal"] for r in records}
    manifest = export_sft(store, tmp_path / "good.jsonl", agent=NAMES[1], min_scores={"goal": 6})
    rows = load(tmp_path / "good.jsonl")
    kept = {e for e, goal in goals.items() if goal >= 6}
    assert kept and kept != set(goals)  # the filter is not vacuous
    assert {row["episode_id"] for row in rows} == kept
    assert {row["agent"] for row in rows} == {NAMES[1]}
    assert manifest.skipped["agent_below_min_scores"] == len(goals) - len(kept)
    assert manifest.filters.min_scores == {"goal": 6}
    none = tmp_path / "none.jsonl"
    with pytest.raises(EmptySelectionError, match="no episodes \\(model 'openai/other'\\)"):
        export_sft(store, none, model="openai/other")
    assert not none.exists()
    assert export_sft(store, none, model="openai/other", allow_empty=True).examples == 0


async def test_scripted_agents_and_failed_episodes_give_no_examples(
    llm_server: LocalLLMServer, store: EpisodeStore, tmp_path: Path
) -> None:
    hello = AgentAction(action_type="speak", argument="Evening!")
    agents = [ScriptedAgent(name, [hello] * 2) for name in NAMES]
    await sa.arun(bakery("scripted"), agents, store=store, tag="scripted")
    with pytest.raises(EmptySelectionError, match="none of their agents made a model call"):
        export_sft(store, tmp_path / "sft.jsonl", tag="scripted")
    assert not (tmp_path / "sft.jsonl").exists()
    manifest = export_sft(store, tmp_path / "sft.jsonl", tag="scripted", allow_empty=True)
    assert manifest.examples == 0 and manifest.episodes_read == 1
    assert (tmp_path / "sft.jsonl").read_text() == ""


async def test_preference_pairs_share_their_prompt_and_rank_by_goal(
    llm_server: LocalLLMServer, store: EpisodeStore, tmp_path: Path
) -> None:
    llm_server.rule = VariedRule()
    records = {r.episode_id: r for r in await played(llm_server, store, 4, "study")}
    out = tmp_path / "pairs.jsonl"
    manifest = export_preferences(store, out, tag="study")
    rows = load(out)
    assert len(rows) == manifest.examples > 0
    for row in rows:
        chosen, rejected = records[row["chosen_episode"]], records[row["rejected_episode"]]
        agent = row["agent"]
        assert chosen.scores[agent]["goal"] > rejected.scores[agent]["goal"]
        assert row["chosen_score"] == chosen.scores[agent]["goal"]
        assert row["chosen"] != row["rejected"]
        # The prompt is exactly what each of the two was sent for that action.
        sent = [
            [m.model_dump() for m in call.messages]
            for record in (chosen, rejected)
            for call in record.calls
            if call.scope == f"{record.episode_id}/{agent}"
        ]
        assert sum(prompt == row["prompt"] for prompt in sent) == 2
        targets = {json.loads(row["chosen"][0]["content"])["argument"]}
        assert targets <= {c.parsed["argument"] for c in chosen.calls}  # type: ignore[index]
    assert manifest.dimension == "goal" and manifest.kind == "preference"


async def test_preferences_refuse_a_dimension_the_judge_did_not_score(
    llm_server: LocalLLMServer, store: EpisodeStore, tmp_path: Path
) -> None:
    llm_server.rule = VariedRule()
    await played(llm_server, store, 1, "study")
    with pytest.raises(ValueError, match="no 'charm' score"):
        export_preferences(store, tmp_path / "pairs.jsonl", dimension="charm")


async def test_the_cli_writes_sft_and_preference_files(
    llm_server: LocalLLMServer, store: EpisodeStore, tmp_path: Path, storage_data_dir: str
) -> None:
    llm_server.rule = VariedRule()
    await played(llm_server, store, 3, "study")
    store.close()
    runner = CliRunner()
    sft = runner.invoke(
        app,
        ["training-data", "sft", str(tmp_path / "sft.jsonl"), "--tag", "study", "--min-goal", "3"],
    )
    assert sft.exit_code == 0, sft.output
    manifest = TrainingManifest.model_validate_json((tmp_path / "sft.manifest.json").read_text())
    assert manifest.filters.min_scores == {"goal": 3.0}
    assert f"wrote {manifest.examples} examples from {manifest.episodes_used} of 3" in sft.output
    pairs = runner.invoke(
        app, ["training-data", "preference", str(tmp_path / "pairs.jsonl"), "--min-score", "goal=0"]
    )
    assert pairs.exit_code == 0, pairs.output
    assert len(load(tmp_path / "pairs.jsonl")) > 0
    bad = runner.invoke(
        app, ["training-data", "sft", str(tmp_path / "x.jsonl"), "--min-score", "goal"]
    )
    assert bad.exit_code == 1 and "DIMENSION=VALUE" in bad.output


class SameScoresRule(VariedRule):
    """Agents say different things; the judge gives every episode the same scores."""

    def __call__(self, request: Mapping[str, Any]) -> ReplyLike:
        schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("schema")
        if isinstance(schema, dict) and "action_type" not in schema.get("properties", {}):
            return schema_rule(request)
        return super().__call__(request)


async def test_no_preference_pair_is_an_error_that_says_why(
    llm_server: LocalLLMServer, store: EpisodeStore, tmp_path: Path
) -> None:
    llm_server.rule = SameScoresRule()
    await played(llm_server, store, 4, "flat")
    out = tmp_path / "pairs.jsonl"
    with pytest.raises(EmptySelectionError) as error:
        export_preferences(store, out, tag="flat")
    assert "all 4 rated episodes gave every agent the same goal score" in str(error.value)
    assert "no pair differs" in str(error.value)
    assert not out.exists() and not manifest_path(out).exists()
    # Asked for, an empty file is written, with its manifest.
    manifest = export_preferences(store, out, tag="flat", allow_empty=True)
    assert manifest.examples == 0 and out.read_text() == ""


async def test_pairs_within_the_minimum_gap_are_counted_in_the_reason(
    llm_server: LocalLLMServer, store: EpisodeStore, tmp_path: Path
) -> None:
    llm_server.rule = VariedRule()
    await played(llm_server, store, 3, "study")
    with pytest.raises(EmptySelectionError, match="scores within the minimum gap 100"):
        export_preferences(store, tmp_path / "pairs.jsonl", tag="study", min_gap=100)


async def test_every_row_names_the_judge_its_scores_came_from(
    llm_server: LocalLLMServer, store: EpisodeStore, tmp_path: Path
) -> None:
    llm_server.rule = VariedRule()
    records = await played(llm_server, store, 3, "study")
    keys = {r.verdicts[0].key for r in records}
    export_sft(store, tmp_path / "sft.jsonl", tag="study")
    export_preferences(store, tmp_path / "pairs.jsonl", tag="study")
    for name in ("sft.jsonl", "pairs.jsonl"):
        rows = [json.loads(line) for line in (tmp_path / name).read_text().splitlines()]
        assert rows and {row["judge"] for row in rows} == keys
        assert all(key.startswith("openai/judge | sotopia_eval | ") for key in keys)


async def test_the_cli_refuses_empty_training_data_unless_allowed(
    llm_server: LocalLLMServer, store: EpisodeStore, tmp_path: Path, storage_data_dir: str
) -> None:
    llm_server.rule = SameScoresRule()
    await played(llm_server, store, 2, "flat")
    store.close()
    runner = CliRunner()
    out = tmp_path / "pairs.jsonl"
    refused = runner.invoke(app, ["training-data", "preference", str(out), "--tag", "flat"])
    assert refused.exit_code == 1
    assert "error: no preference pairs: all 2 rated episodes" in refused.output
    assert not out.exists()
    nothing = runner.invoke(app, ["training-data", "sft", str(out), "--tag", "no-such-tag"])
    assert nothing.exit_code == 1 and "no episodes (tag 'no-such-tag')" in nothing.output
    allowed = runner.invoke(
        app, ["training-data", "preference", str(out), "--tag", "flat", "--allow-empty"]
    )
    assert allowed.exit_code == 0, allowed.output
    assert "wrote 0 pairs" in allowed.output and out.read_text() == ""
