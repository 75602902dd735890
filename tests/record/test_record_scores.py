"""Every score names its source: ``Verdict.scores`` and ``EpisodeRecord.scores`` are the
same kind of attribute (a property giving :class:`Scores`, which carry their judge and
rubric), and which verdict a record's scores come from is stated and can be chosen."""

import json
import pickle

from test_record_checks import NAMES, RATED, _goal_verdict

from sotopia_are.evaluation import Evaluation
from sotopia_are.record import EpisodeRecord, Scores, Verdict, load_record


def _failed(judge: str) -> Verdict:
    evaluation = Evaluation(
        rubric="goal_only", model=judge, agent_names=NAMES, samples=1, valid_samples=0
    )
    return Verdict(judge_model=judge, rubric="goal_only", evaluation=evaluation)


def test_verdict_and_record_scores_are_both_properties_naming_their_source() -> None:
    for owner in (Verdict, EpisodeRecord):
        assert isinstance(owner.__dict__["scores"], property)
    verdict = RATED.verdicts[0]
    assert isinstance(verdict.scores, Scores) and isinstance(RATED.scores, Scores)
    assert RATED.scores == verdict.scores
    assert (RATED.scores.judge_model, RATED.scores.rubric) == ("openai/judge", "goal_only")
    assert RATED.scores.source == "judge openai/judge, rubric goal_only"
    assert RATED.scores["Ana Lee"] == {"goal": 7.0, "overall_score": 7.0}
    assert list(RATED.scores) == NAMES
    assert "judge_model='openai/judge'" in repr(RATED.scores)
    # Still a plain mapping for code that indexes or dumps it.
    assert json.loads(json.dumps(RATED.scores))["Bo Chen"]["goal"] == 3.0


def test_scores_of_another_judge_differ_even_with_the_same_numbers() -> None:
    ours = RATED.verdicts[0].scores
    theirs = _goal_verdict([7, 3, 5], judge="openai/other").scores
    assert dict(ours) == dict(theirs) and ours != theirs
    assert ours == Scores(dict(ours), judge_model="openai/judge", rubric="goal_only")
    assert ours == dict(ours)  # against a plain dict, the numbers are what there is
    restored = pickle.loads(pickle.dumps(ours))
    assert restored == ours and restored.source == ours.source


def test_the_default_is_the_latest_rated_verdict_and_judge_chooses() -> None:
    second = RATED.with_verdict(_goal_verdict([1, 2, 3], judge="openai/second"))
    assert second.scores.judge_model == "openai/second" and second.scores["Ana Lee"]["goal"] == 1
    # A later judge that failed does not hide the earlier scores, nor take their name.
    failed = second.with_verdict(_failed("openai/broken"))
    assert failed.verdict is not None and failed.verdict.judge_model == "openai/broken"
    assert failed.scores.judge_model == "openai/second"
    chosen = failed.verdict_of("openai/judge")
    assert chosen is not None and chosen.scores["Ana Lee"]["goal"] == 7
    by_key = failed.verdict_of(RATED.verdicts[0].key)
    assert by_key is chosen
    assert failed.verdict_of("openai/broken") is None and failed.verdict_of("nobody") is None
    unrated = RATED.model_copy(update={"verdicts": (_failed("openai/broken"),)})
    assert unrated.scores == Scores() and unrated.scores.source == "unrated"


def test_older_records_read_as_version_3_without_problems() -> None:
    document = json.loads(RATED.to_json())
    assert document["version"] == 3 and document["problems"] == []
    for version in (1, 2):
        older = {**document, "version": version}
        del older["problems"]
        if version == 1:
            del older["agent_sampling"]
        record = load_record(older)
        assert record.version == 3 and record.problems == () and record == RATED
