"""`agreement`: human ratings read from SOTOPIA-π's files, a panel of judges over stored
episodes, and the judge/human correlations — with the stand-in server and with a real
small model's recorded answers."""

import asyncio
import json
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from sotopia_are.evaluation import SOTOPIA_EVAL, LLMJudge
from sotopia_are.llm import LLMConfig, LLMSession
from sotopia_are.record import EpisodeRecord
from sotopia_are.storage import EpisodeStore
from sotopia_are.studies import (
    AgreementError,
    agreement,
    arate_script,
    labelled_scripts,
    panel_scores,
    rate_stored,
    read_human_ratings,
    script_context,
    script_record,
    stored_agreement,
)
from sotopia_are.testing import LocalLLMServer

DATA = Path(__file__).parents[1] / "data"
LABELS = DATA / "sotopia_human"
TRANSCRIPTS = DATA / "transcripts"
RECORDING = LABELS / "judge-qwen15.jsonl"
# The labelled episodes the recorded real judge rated (on the sixth it looped until its
# token budget ran out: see tests/data/sotopia_human/README.md).
RECORDED = [
    "he_01HNBEX1CAAMK0YQ7M1ZZ6BHS4",
    "he_01H8FN411QTBBRRKBVSYFFGKVQ",
    "he_01HMX2QGK0R400PTY9YH7F50F3",
    "he_01HMNB9CHFWDPMMTSK611QVAFC",
    "he_01HNBAXJ1HS3NVDHEX69DY72HF",
]
CSV_EXCERPT = LABELS / "sotopia-pi_human_eval_gpt3.5_final.excerpt.csv"
# Labelled episodes whose participants differ, so the stand-in judge knows which it rates.
DISTINCT = [
    "he_01HNBEX1CAAMK0YQ7M1ZZ6BHS4",  # Samuel Anderson, Noah Davis
    "he_01H8FN411QTBBRRKBVSYFFGKVQ",  # Micah Stevens, Noah Davis
    "he_01HMNB9CHFWDPMMTSK611QVAFC",  # Finnegan O'Malley, Gwen Pierce
    "he_01HNBAXJ1HS3NVDHEX69DY72HF",  # William Brown, Ava Martinez
    "he_01HMX2QGK0R400PTY9YH7F50F3",  # Naomi Fletcher, Lena Goodwin
]
# Each stand-in judge's goal score per agent; every other dimension gets the middle.
GOALS = {
    "judge-a": {
        "Samuel Anderson": 7, "Noah Davis": 3, "Micah Stevens": 5, "Finnegan O'Malley": 1,
        "Gwen Pierce": 2, "William Brown": 9, "Ava Martinez": 8, "Naomi Fletcher": 4,
        "Lena Goodwin": 6,
    },
    "judge-b": {
        "Samuel Anderson": 2, "Noah Davis": 4, "Micah Stevens": 9, "Finnegan O'Malley": 0,
        "Gwen Pierce": 3, "William Brown": 10, "Ava Martinez": 5, "Naomi Fletcher": 7,
        "Lena Goodwin": 8,
    },
}  # fmt: skip


def human_means(stem: str, dimension: str) -> dict[str, float]:
    """The annotators' mean on ``dimension`` per agent, computed here from the raw file."""
    document = json.loads((LABELS / f"{stem}.json").read_text(encoding="utf-8"))
    annotations = document["human_annotations"]
    return {
        document[f"agent_{slot}_name"]: statistics.fmean(
            a[f"{dimension}_{slot}"] for a in annotations
        )
        for slot in (1, 2)
    }


def stand_in_judge(body: Mapping[str, Any]) -> str:
    """Each judge model's goal table; the middle of the range everywhere else."""
    prompt = "\n".join(m["content"] for m in body["messages"])
    goals = GOALS[body["model"]]
    names = [name for name in goals if f'"{name}"' in prompt or f"{name} said" in prompt]
    return json.dumps(
        {
            name: {
                d.name: {
                    "reasoning": "…",
                    "score": goals[name] if d.name == "goal" else (d.low + d.high) // 2,
                }
                for d in SOTOPIA_EVAL.dimensions
            }
            for name in names
        }
    )


def stored_transcripts(store: EpisodeStore, stems: list[str]) -> list[str]:
    for stem in stems:
        text = (TRANSCRIPTS / f"{stem}.txt").read_text(encoding="utf-8")
        record = asyncio.run(
            script_record(text, script_context(text, episode_id=stem), episode_id=stem)
        )
        store.save_record(record.model_copy(update={"tag": "human"}))
    return stems


def test_human_ratings_are_the_annotators_mean() -> None:
    labels = read_human_ratings(sorted(LABELS.glob("he_*.json")))
    assert len(labels.episodes) == 6
    finn = labels.find("he_01HMNB9CHFWDPMMTSK611QVAFC")
    assert finn is not None
    assert finn is labels.find("01HMNB9CHFWDPMMTSK611QVAFC")  # stored under its pk too
    assert finn.agents == ("Finnegan O'Malley", "Gwen Pierce")
    assert finn.annotators == 2
    # Annotators gave believability 8 and 5, relationship 0 and -2, social rules 0 and -4.
    assert finn.scores["Finnegan O'Malley"]["believability"] == 6.5
    assert finn.scores["Gwen Pierce"]["relationship"] == -1.0
    assert finn.scores["Gwen Pierce"]["social_rules"] == -2.0
    assert set(finn.scores["Gwen Pierce"]) == set(SOTOPIA_EVAL.dimension_names)


def test_the_sotopia_pi_csv_gives_the_same_ratings_as_the_transcripts_json() -> None:
    from_csv = read_human_ratings([CSV_EXCERPT])
    assert [e.episode_id for e in from_csv.episodes] == [
        "01H8FK34JHJSTT5HQVM5K8T4MQ",
        "01H8FN411QTBBRRKBVSYFFGKVQ",
    ]
    micah = from_csv.find("01H8FN411QTBBRRKBVSYFFGKVQ")
    from_json = read_human_ratings([LABELS / "he_01H8FN411QTBBRRKBVSYFFGKVQ.json"]).episodes[0]
    assert micah is not None
    assert micah.agents == from_json.agents == ("Micah Stevens", "Noah Davis")
    assert micah.scores == from_json.scores
    # Both files hold the same annotators: together they would count them twice.
    with pytest.raises(AgreementError, match="01H8FN411QTBBRRKBVSYFFGKVQ is rated again"):
        read_human_ratings([CSV_EXCERPT, LABELS / "he_01H8FN411QTBBRRKBVSYFFGKVQ.json"])


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bad.json", "{not json", "not JSON"),
        ("bad.json", '{"agent_1_name": "A"}', "missing agent_2_name, human_annotations"),
        (
            "bad.json",
            '{"agent_1_name": "A", "agent_2_name": "B", "human_annotations": '
            '[{"goal_1": "high", "goal_2": 3}]}',
            "annotator 1: goal_1 is 'high', not a number",
        ),
        ("bad.csv", "pk,goal_1,goal_2\nx,1,2\n", "missing column data"),
        ("bad.csv", 'pk,data,goal_1,goal_2\nx,"{}",1,2\n', "line 2: its data column has no JSON"),
    ],
)
def test_a_malformed_labels_file_is_named_with_what_is_wrong(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(AgreementError, match=str(path)) as raised:
        read_human_ratings([path])
    assert message in str(raised.value)


def test_a_panel_of_judges_rates_stored_episodes_and_agrees_as_computed_by_hand(
    store: EpisodeStore, llm_server: LocalLLMServer
) -> None:
    llm_server.rule = stand_in_judge
    ids = stored_transcripts(store, DISTINCT)
    session = LLMSession(LLMConfig(api_base=llm_server.url, api_key="sk-test"))
    judges = [LLMJudge(f"openai/{name}", SOTOPIA_EVAL, session=session) for name in GOALS]
    outcomes = rate_stored(store, ids, judges)
    assert [(o.episode_id, o.judge, o.rated) for o in outcomes] == [
        (episode_id, f"openai/{name}", True) for episode_id in ids for name in GOALS
    ]
    # Each judge's verdict is stored separately, and the panel is their mean and spread.
    record = store.load(ids[0])
    assert [v.judge_model for v in record.verdicts] == ["openai/judge-a", "openai/judge-b"]
    samuel = panel_scores(record)["Samuel Anderson"]["goal"]
    assert (samuel.mean, samuel.sd, samuel.n) == (4.5, 2.5, 2)
    assert panel_scores(record, ["openai/judge-b"])["Samuel Anderson"]["goal"].mean == 2

    reports = stored_agreement(store, sorted(LABELS.glob("he_*.json")), tag="human", seed=3)
    assert [r.judge for r in reports] == [
        "openai/judge-a | sotopia_eval | " + record.verdicts[0].prompt,
        "openai/judge-b | sotopia_eval | " + record.verdicts[1].prompt,
        "panel of 2 judges",
    ]
    humans = {}
    for stem in ids:
        humans.update({(stem, agent): goal for agent, goal in human_means(stem, "goal").items()})
    pairs = list(humans)
    human_goal = [humans[pair] for pair in pairs]
    for report, table in zip(reports, [GOALS["judge-a"], GOALS["judge-b"], None], strict=True):
        assert sorted(report.episodes) == sorted(ids)
        assert report.unrated == ("he_01HMN77RC0XRQS1A90B9DX75A8",)  # labelled, not stored
        judged = [
            (GOALS["judge-a"][a] + GOALS["judge-b"][a]) / 2 if table is None else table[a]
            for _, a in pairs
        ]
        goal = next(d for d in report.dimensions if d.dimension == "goal")
        assert goal.n == 10
        assert goal.pearson == pytest.approx(statistics.correlation(judged, human_goal))
        assert goal.pearson_ci is not None
        assert goal.pearson_ci[0] <= goal.pearson <= goal.pearson_ci[1]
        # The same middle score for everyone: no correlation to speak of.
        believability = next(d for d in report.dimensions if d.dimension == "believability")
        assert (believability.pearson, believability.spearman) == (None, None)
        assert believability.pearson_ci is None
    # Seeded: the same numbers again; the JSON form says how they were computed.
    again = stored_agreement(store, sorted(LABELS.glob("he_*.json")), tag="human", seed=3)
    assert [r.to_dict() for r in again] == [r.to_dict() for r in reports]
    assert reports[0].to_dict()["bootstrap"] == {
        "resamples": 1000, "confidence": 0.95, "seed": 3, "unit": "episode"
    }  # fmt: skip


def test_no_shared_episodes_is_an_error_saying_what_to_do(
    store: EpisodeStore, llm_server: LocalLLMServer
) -> None:
    labels = read_human_ratings(sorted(LABELS.glob("he_*.json")))
    with pytest.raises(AgreementError, match="share no episodes"):
        agreement([], labels)
    stored_transcripts(store, DISTINCT[:1])  # stored, never rated
    with pytest.raises(AgreementError, match="none of the 1 labelled episodes found was rated"):
        stored_agreement(store, sorted(LABELS.glob("he_*.json")))


def replayed_verdicts() -> list[EpisodeRecord]:
    """Five labelled transcripts rated by Qwen2.5-Coder-1.5B, replayed offline."""
    session = LLMSession.replaying(RECORDING, LLMConfig(api_base="http://127.0.0.1:1/v1"))
    judge = LLMJudge("openai/qwen15", SOTOPIA_EVAL, session=session)

    async def rate_all() -> list[EpisodeRecord]:
        records = []
        for stem in RECORDED:
            text = (TRANSCRIPTS / f"{stem}.txt").read_text(encoding="utf-8")
            spec = script_context(text, episode_id=stem)
            records.append(await arate_script(text, judge, spec, episode_id=stem))
        return records

    return asyncio.run(rate_all())


def test_a_real_judges_recorded_answers_agree_as_computed_by_hand() -> None:
    records = replayed_verdicts()
    assert all(r.verdict is not None and r.verdict.rated for r in records)
    labels = read_human_ratings(sorted(LABELS.glob("he_*.json")))
    (report,) = agreement(records, labels)
    assert report.judge.startswith("openai/qwen15 | sotopia_eval | ")
    assert report.episodes == tuple(RECORDED)
    assert report.unrated == ("he_01HMN77RC0XRQS1A90B9DX75A8",)
    assert [d.dimension for d in report.dimensions] == SOTOPIA_EVAL.dimension_names
    for dimension in report.dimensions:
        judged, human = [], []
        for record in records:
            means = human_means(record.episode_id, dimension.dimension)
            for agent, scores in record.scores.items():
                judged.append(scores[dimension.dimension])
                human.append(means[agent])
        assert dimension.n == len(judged) == 10
        if len(set(judged)) == 1 or len(set(human)) == 1:
            assert dimension.pearson is None and dimension.spearman is None
        else:
            assert dimension.pearson == pytest.approx(statistics.correlation(judged, human))


def test_the_csvs_own_conversations_are_rated_and_compared(
    store: EpisodeStore, llm_server: LocalLLMServer
) -> None:
    scripts = labelled_scripts(CSV_EXCERPT)
    assert list(scripts) == ["01H8FK34JHJSTT5HQVM5K8T4MQ", "01H8FN411QTBBRRKBVSYFFGKVQ"]
    text, context = scripts["01H8FN411QTBBRRKBVSYFFGKVQ"]
    assert context.agent_names == ["Micah Stevens", "Noah Davis"]
    assert context.agent_goals[0].startswith("Tell the cousin's partner that they are no longer")
    # The same conversation as the published transcript of that episode.
    published = (TRANSCRIPTS / "he_01H8FN411QTBBRRKBVSYFFGKVQ.txt").read_text(encoding="utf-8")
    from_csv = asyncio.run(script_record(text, context, episode_id="csv"))
    from_txt = asyncio.run(script_record(published, episode_id="txt"))
    assert [(a, x.action_type) for a, x in from_csv.actions()] == [
        (a, x.action_type) for a, x in from_txt.actions()
    ]
    llm_server.rule = stand_in_judge
    session = LLMSession(LLMConfig(api_base=llm_server.url, api_key="sk-test"))
    judge = LLMJudge("openai/judge-a", SOTOPIA_EVAL, session=session)
    records = [
        asyncio.run(arate_script(script, judge, background, episode_id=pk))
        for pk, (script, background) in scripts.items()
        if pk == "01H8FN411QTBBRRKBVSYFFGKVQ"
    ]
    (report,) = agreement(records, read_human_ratings([CSV_EXCERPT]))
    assert report.episodes == ("01H8FN411QTBBRRKBVSYFFGKVQ",)
    assert report.unrated == ("01H8FK34JHJSTT5HQVM5K8T4MQ",)
    goal = next(d for d in report.dimensions if d.dimension == "goal")
    # Two pairs: r is ±1 or undefined, and one episode is too few to resample.
    assert goal.n == 2 and goal.pearson_ci is None
