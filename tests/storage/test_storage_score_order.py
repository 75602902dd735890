"""A rubric's dimensions keep their order through every store and file (the store once
wrote them with sorted keys, so they came back alphabetical), and listings give the
agents in the spec's order, naming the judge and rubric of the scores they show."""

import asyncio
import io
import json
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sotopia_are.agents import ScriptedAgent
from sotopia_are.evaluation import SOTOPIA_EVAL, AgentRating, DimensionScore, Evaluation
from sotopia_are.messages import AgentAction
from sotopia_are.record import (
    EpisodeRecord,
    Verdict,
    load_record,
    record_from_are_json,
    record_of_result,
)
from sotopia_are.social import EpisodeSpec, run_episode
from sotopia_are.storage import (
    EpisodeLog,
    EpisodeStore,
    export_episode_json,
    export_episodes,
    import_episodes,
)

# Zoë before Ada: participant order that is not alphabetical either.
NAMES = ["Zoë O'Brien", "Ada Brooks"]
DIMENSION = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=6)
DIMENSIONS = st.lists(DIMENSION, min_size=2, max_size=7, unique=True)


def _played(episode_id: str) -> EpisodeRecord:
    spec = EpisodeSpec(
        episode_id=episode_id,
        scenario="Two neighbours share a garden.",
        agent_names=NAMES,
        agent_backgrounds=["", ""],
        agent_goals=["the sunny plot", "the shed"],
        max_turns=2,
    )
    hello = AgentAction(action_type="speak", argument="Hello there.")
    agents = [ScriptedAgent(name, [hello, hello]) for name in NAMES]
    return record_of_result(asyncio.run(run_episode(spec, agents)), tag="order")


PLAYED = _played("order-1")


def _verdict(dimensions: list[str], judge: str = "openai/judge", rubric: str = "mine") -> Verdict:
    ratings = [
        AgentRating.of(
            name,
            [
                DimensionScore.of(d, 0, 10, [(n + i) % 11], ["why"])
                for i, d in enumerate(dimensions)
            ],
        )
        for n, name in enumerate(NAMES)
    ]
    evaluation = Evaluation(
        rubric=rubric, model=judge, agent_names=NAMES, samples=1, valid_samples=1, ratings=ratings
    )
    return Verdict(judge_model=judge, rubric=rubric, prompt="p@1", evaluation=evaluation)


def _orders(record: EpisodeRecord) -> list[tuple[str, list[str]]]:
    """Every agent's dimension names, in every verdict, as the record holds them."""
    orders = [
        (rating.agent, list(rating.dimensions))
        for verdict in record.verdicts
        for rating in verdict.evaluation.ratings
    ]
    orders += [(agent, list(scores)) for agent, scores in record.scores.items()]
    return orders


@given(DIMENSIONS)
@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_dimensions_keep_the_rubric_order_through_every_store_and_file(
    store: EpisodeStore, dimensions: list[str]
) -> None:
    record = PLAYED.with_verdict(_verdict(dimensions))
    expected = _orders(record)
    assert [d for d in expected[0][1]] == dimensions
    assert list(record.scores) == NAMES
    # JSON
    assert _orders(load_record(record.to_json())) == expected
    # The store, written whole
    store.save_record(record, replace=True)
    assert _orders(store.load(record.episode_id)) == expected
    # The store, the verdict added to a stored episode
    store.save_record(PLAYED, replace=True)
    assert _orders(store.add_verdict(PLAYED.episode_id, _verdict(dimensions))) == expected
    stored = store.load(PLAYED.episode_id)
    assert _orders(stored) == expected
    # The index the listing reads, and the listing: agents in the spec's order
    log = store.get_episode(PLAYED.episode_id)
    assert [list(scores) for scores in log.scores.values()] == [[*dimensions, "overall_score"]] * 2
    (summary,) = store.summaries(tag="order")
    assert list(summary.overall) == NAMES
    assert (summary.judge, summary.rubric, summary.judges) == (
        "openai/judge",
        "mine",
        ["openai/judge"],
    )
    # JSONL out and back in
    out = io.StringIO()
    export_episodes(store, out)
    store.delete_episode(PLAYED.episode_id)
    import_episodes(store, out.getvalue().splitlines())
    assert _orders(store.load(PLAYED.episode_id)) == expected
    # ARE JSON out and back
    are = export_episode_json(store, PLAYED.episode_id)
    assert _orders(record_from_are_json(are)) == expected


def test_verdicts_stored_with_sorted_keys_read_back_in_their_builtin_rubric_order(
    store: EpisodeStore,
) -> None:
    rubric = SOTOPIA_EVAL.dimension_names
    record = PLAYED.with_verdict(_verdict(rubric, rubric=SOTOPIA_EVAL.name))
    store.save_record(record)
    # As the store wrote it before it kept the order: every key sorted.
    key = EpisodeLog.redis_key(record.episode_id)
    stored = json.loads(store.client.hget(key, "verdicts") or "[]")
    store.client.hset(key, "verdicts", json.dumps(stored, sort_keys=True))
    sorted_back = json.loads(store.client.hget(key, "verdicts") or "[]")
    ratings = sorted_back[0]["evaluation"]["ratings"]
    assert list(ratings[0]["dimensions"]) == sorted(rubric) != rubric  # the old layout
    loaded = store.load(record.episode_id)
    assert _orders(loaded) == _orders(record)
    # A rubric that is not built-in has no known order: it stays as stored.
    own = PLAYED.with_verdict(_verdict(["b", "a"])).model_copy(update={"episode_id": "order-2"})
    store.save_record(own)
    key = EpisodeLog.redis_key("order-2")
    stored = json.loads(store.client.hget(key, "verdicts") or "[]")
    store.client.hset(key, "verdicts", json.dumps(stored, sort_keys=True))
    assert list(store.load("order-2").scores[NAMES[0]]) == ["a", "b", "overall_score"]
