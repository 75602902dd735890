"""The viewer's pages from real stored episodes: untrusted text escaped, each agent's
view free of what it could not perceive, every verdict's reasoning and every model call
shown, the list filtered, and each batch's score distributions drawn."""

import re

import pytest
from markupsafe import escape
from viewer_support import GARDEN_WHISPER, MODELS, SPEECH, TAG, Seeded, agent_sections

import sotopia_are as sa
from sotopia_are.agents import ScriptedAgent
from sotopia_are.record import EpisodeRecord, EpisodeSummary
from sotopia_are.social import EpisodeStatus
from sotopia_are.testing import LocalLLMServer
from sotopia_are.viewer import (
    EpisodeFilter,
    histogram,
    render_episode,
    render_index,
    render_static,
    render_tag,
)


def load(seeded: Seeded, episode_id: str) -> EpisodeRecord:
    with seeded.store() as store:
        return store.load(episode_id)


def listed(page: str) -> list[str]:
    """The episode ids an index page lists."""
    return re.findall(r'<a class="episode-link" href="[^"]*">([^<]*)</a>', page)


def test_untrusted_text_is_escaped_and_no_page_runs_a_script(seeded: Seeded) -> None:
    record = load(seeded, seeded.played[0])
    page = render_episode(record)
    assert "<script" not in page.lower() and "<b>halfway" not in page
    assert str(escape(SPEECH)) in page
    assert "&lt;em&gt;time&lt;/em&gt;" in page  # the scenario, in the background
    assert "&lt;i&gt;Mara Quinn&lt;/i&gt; on goal" in page  # the judge's reasoning
    failed = render_index([], EpisodeFilter()) + render_episode(load(seeded, seeded.failed))
    assert "&lt;timeout&gt;" in failed and "<timeout>" not in failed


def test_the_policy_forbids_every_script_on_served_pages(seeded: Seeded) -> None:
    page = render_episode(load(seeded, seeded.garden))
    assert 'content="default-src &#39;none&#39;' in page
    assert "script-src &#39;none&#39;" in page


def test_a_whisper_is_marked_in_the_transcript_and_absent_from_an_outsiders_view(
    seeded: Seeded,
) -> None:
    page = render_episode(load(seeded, seeded.garden))
    transcript = page.split('<section class="transcript-all">')[1].split("</section>")[0]
    assert GARDEN_WHISPER in transcript
    assert '<span class="private-marker">private to Ines Okafor</span>' in transcript
    views = agent_sections(page)
    assert set(views) == {"Ines Okafor", "Benedikt Müller-Roth", "Jo Ng"}
    assert GARDEN_WHISPER in views["Ines Okafor"] and GARDEN_WHISPER in views["Jo Ng"]
    assert GARDEN_WHISPER not in views["Benedikt Müller-Roth"]
    assert "private-marker" not in views["Benedikt Müller-Roth"]
    # The outsider still sees the public conversation, and only its own goal.
    assert "The children have been waiting since spring" in views["Benedikt Müller-Roth"]


def test_every_verdicts_reasoning_per_dimension_is_shown(seeded: Seeded) -> None:
    record = load(seeded, seeded.garden)
    assert [v.judge_model for v in record.verdicts] == ["openai/judge-one", "openai/judge-two"]
    page = render_episode(record)
    for verdict in record.verdicts:
        assert f"verdict {record.verdicts.index(verdict) + 1}: {verdict.judge_model}" in page
        for rating in verdict.evaluation.ratings:
            for dimension in rating.dimensions.values():
                for reasoning in dimension.reasonings:
                    assert str(escape(reasoning)) in page, reasoning


def test_every_model_call_is_shown_with_its_prompt_and_reply(seeded: Seeded) -> None:
    record = load(seeded, seeded.played[1])
    page = render_episode(record)
    judged = [call for verdict in record.verdicts for call in verdict.evaluation.calls]
    assert len(record.calls) == 3 and len(judged) == 1
    for call in [*record.calls, *judged]:
        assert call.raw_text is not None and str(escape(call.raw_text)) in page
        for message in call.messages:
            assert str(escape(message.content)) in page
    assert page.count('<details class="call">') == 4


def test_the_list_is_filtered_by_tag_model_status_and_score(seeded: Seeded) -> None:
    with seeded.store() as store:
        summaries = store.summaries()
    everything = listed(render_index(summaries))
    assert sorted(everything) == sorted(
        [seeded.garden, seeded.bakery, *seeded.played, seeded.failed]
    )
    assert sorted(listed(render_index(summaries, EpisodeFilter(tag="demo")))) == sorted(
        [seeded.garden, seeded.bakery]
    )
    by_model = listed(render_index(summaries, EpisodeFilter(model=MODELS[0])))
    assert sorted(by_model) == ["played-0", "played-2", "played-failed"]
    failed = EpisodeFilter(status=EpisodeStatus.FAILED)
    assert listed(render_index(summaries, failed)) == [seeded.failed]
    worst = min(min(s.overall.values()) for s in summaries if s.overall)
    low = listed(render_index(summaries, EpisodeFilter(max_score=worst)))
    assert low and all(min(s.overall.values()) == worst for s in summaries if s.episode_id in low)
    # An unrated episode never matches a score bound.
    assert seeded.bakery not in listed(render_index(summaries, EpisodeFilter(min_score=-100)))


def test_a_filter_from_the_query_string_and_its_errors() -> None:
    query = {"tag": "study", "model": "", "status": "failed", "min_score": "-1.5"}
    assert EpisodeFilter.from_query(query) == EpisodeFilter(
        tag="study", status=EpisodeStatus.FAILED, min_score=-1.5
    )
    with pytest.raises(ValueError, match="min_score must be a number"):
        EpisodeFilter.from_query({"min_score": "low"})
    with pytest.raises(ValueError, match="unknown status 'done'"):
        EpisodeFilter.from_query({"status": "done"})


def test_each_tag_is_summed_up_with_its_overall_score_distribution(seeded: Seeded) -> None:
    with seeded.store() as store:
        summaries = store.summaries()
    page = render_index(summaries)
    batches = page.split('<table id="batches">')[1]
    row = batches.split(f'<a href="/tag/{TAG}">{TAG}</a>')[1].split("</tr>")[0]
    # 4 episodes: 3 complete (rated) and 1 failed; 2 agents rated in each of 3 episodes.
    cells = re.findall(r"<td>(\d+)</td>", row)
    assert cells == ["4", "0", "3", "1", "0", "3"]
    assert "overall score · 6 scores" in row and row.count('<rect class="bar"') >= 1


def test_a_batch_page_plots_every_dimension_and_each_models_means(seeded: Seeded) -> None:
    records = [load(seeded, episode_id) for episode_id in seeded.played]
    page = render_tag(TAG, records)
    names = [*records[0].verdicts[0].evaluation.ratings[0].dimensions, "overall_score"]
    for name in names:
        assert f"<figcaption>{name} · 6 scores" in page
    assert page.count("<svg") == len(names)
    table = page.split('<table class="per-model">')[1]
    assert table.count("<tr><td>openai/model-") == 2
    goal = [
        r.dimensions["goal"].mean for rec in records for r in rec.verdicts[0].evaluation.ratings
    ]
    assert f"goal · 6 scores, mean {sum(goal) / len(goal):.2f}" in page


def test_a_histogram_counts_each_score_at_its_nearest_whole_number() -> None:
    drawn = histogram("goal", [0, 2.4, 2.6, 3, 10], low=0, high=10)
    assert [bar.value for bar in drawn.bars] == list(range(11))
    assert {bar.value: bar.count for bar in drawn.bars if bar.count} == {0: 1, 2: 1, 3: 2, 10: 1}
    tallest = max(drawn.bars, key=lambda bar: bar.count)
    assert tallest.value == 3 and tallest.height == drawn.height
    assert histogram("empty", []).total == 0 and histogram("empty", []).mean is None


def test_the_static_file_holds_every_episode_and_only_its_own_script(seeded: Seeded) -> None:
    with seeded.store() as store:
        summaries = store.summaries()
        records = [store.load(s.episode_id) for s in summaries]
    page = render_static(records, summaries)
    for record in records:
        assert f'<section class="page" id="episode-{record.episode_id}">' in page
    assert '<section class="page" id="tag-study">' in page
    assert page.lower().count("<script") == 1
    assert re.search(r"script-src &#39;sha256-[A-Za-z0-9+/=]+&#39;", page)
    assert str(escape(SPEECH)) in page and "<b>halfway" not in page


def test_a_judge_that_failed_is_shown_with_its_error_and_answers() -> None:
    spec = sa.EpisodeSpec(
        episode_id="unrated",
        scenario="A quick hello.",
        agent_names=["Ana Diaz", "Ben Ong"],
        agent_backgrounds=["a", "b"],
        agent_goals=["greet", "greet back"],
        max_turns=2,
    )
    agents = [
        ScriptedAgent(name, [sa.AgentAction(action_type="speak", argument="Hi")] * 2)
        for name in spec.agent_names
    ]
    with LocalLLMServer() as server:
        server.rule = lambda request: "no rating <here>"
        judge = sa.LLMJudge("openai/judge", config=sa.LLMConfig(api_base=server.url))
        record = sa.run(spec, agents, judge=judge)
    assert record.failed_or_unrated
    page = render_episode(record)
    assert "0 of 1 samples valid" in page
    (failure,) = record.verdicts[0].evaluation.failures
    assert f"sample 1 failed: {failure.error_type}: {escape(failure.error)}" in page
    assert page.count("<pre>no rating &lt;here&gt;</pre>") >= len(failure.raw_outputs) > 0


def test_the_list_names_the_judge_and_rubric_of_its_scores_and_flags() -> None:
    rated = EpisodeSummary(
        episode_id="rated",
        status=EpisodeStatus.COMPLETE,
        agents=["Ana", "Bo"],
        models=["m", "m"],
        verdict_count=2,
        judge="openai/second",
        rubric="goal_only",
        judges=["openai/first", "openai/second"],
        overall={"Ana": 7.0, "Bo": 3.0},
        problems=["turns_played: 5, but the events hold actions in turns 0..1"],
    )
    page = render_index([rated])
    assert "judge openai/second" in page and "rubric goal_only" in page
    assert "latest rated of 2" in page
    assert "FLAGGED: imported despite 1 problems" in page
    assert "latest rated verdict, named by its judge and rubric" in page
