"""The laws of the one record, on random episodes: JSON, the store and JSONL give back
the same record, and export → import → export is stable."""

import asyncio
import io

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sotopia_are.agents import ScriptedAgent
from sotopia_are.evaluation import AgentRating, DimensionScore, Evaluation
from sotopia_are.llm import Sampling
from sotopia_are.messages import AgentAction
from sotopia_are.record import EpisodeRecord, Verdict, load_record, record_of_result
from sotopia_are.social import EpisodeSpec, run_episode
from sotopia_are.storage import EpisodeStore, export_episodes, import_episodes

NAMES = ["Ada Brooks", "Ravi Nair", "Zoë O'Brien"]
WORD = st.text(alphabet=st.sampled_from("abcdé,.!?\"'-—“”"), min_size=1, max_size=8)
TEXT = st.lists(WORD, min_size=1, max_size=4).map(" ".join)
PUBLIC = st.one_of(
    st.builds(AgentAction, action_type=st.just("speak"), argument=TEXT),
    st.builds(AgentAction, action_type=st.just("action"), argument=TEXT),
    st.builds(AgentAction, action_type=st.just("none"), argument=st.just("")),
)
SAMPLING = st.builds(
    Sampling,
    temperature=st.none() | st.floats(min_value=0, max_value=2),
    top_p=st.none() | st.floats(min_value=0, max_value=1, exclude_min=True),
    max_tokens=st.none() | st.integers(min_value=1, max_value=4096),
    seed=st.none() | st.integers(),
    presence_penalty=st.none() | st.floats(-2, 2),
    stop=st.none() | st.lists(TEXT, max_size=2),
    extra=st.dictionaries(
        st.sampled_from(["reasoning_effort", "user", "extra_body"]),
        st.none() | st.floats(-2, 2) | st.lists(TEXT, max_size=2) | st.just({"top_k": 20}),
        max_size=2,
    ),
)
WHISPER = st.builds(
    AgentAction,
    action_type=st.just("speak"),
    argument=TEXT,
    to=st.sampled_from([["Ravi Nair"], ["Zoë O'Brien"], ["Ravi Nair", "Zoë O'Brien"]]),
)


@st.composite
def records(draw: st.DrawFn) -> EpisodeRecord:
    """A record of a random three-agent episode (Ada's private actions included)."""
    turns = draw(st.integers(min_value=1, max_value=6))
    spec = EpisodeSpec(
        episode_id=f"law-{draw(st.integers(min_value=0, max_value=10**6))}",
        scenario="Three neighbours plan a street party.",
        agent_names=NAMES,
        agent_backgrounds=["", "", ""],
        agent_goals=["music", "food", "quiet"],
        max_turns=turns,
        max_stale_turns=turns,
        seed=draw(st.integers(min_value=0, max_value=100)),
    )
    # Only Ada whispers, so every recipient list names other participants.
    agents = [
        ScriptedAgent(
            name,
            draw(
                st.lists(
                    st.one_of(PUBLIC, WHISPER) if name == NAMES[0] else PUBLIC,
                    min_size=turns,
                    max_size=turns,
                )
            ),
        )
        for name in NAMES
    ]
    result = asyncio.run(run_episode(spec, agents))
    record = record_of_result(
        result,
        # As if some agents were LLM agents with their own sampling.
        sampling=draw(st.dictionaries(st.sampled_from(NAMES), SAMPLING, max_size=3)),
        tag=draw(st.sampled_from(["", "t1", "study.2"])),
    )
    if record.status == "complete" and draw(st.booleans()):
        scores = draw(st.lists(st.integers(0, 10), min_size=3, max_size=3))
        evaluation = Evaluation(
            rubric="goal_only",
            model="judge",
            agent_names=NAMES,
            samples=1,
            valid_samples=1,
            ratings=[
                AgentRating.of(name, [DimensionScore.of("goal", 0, 10, [score], ["why"])])
                for name, score in zip(NAMES, scores, strict=True)
            ],
        )
        record = record.with_verdict(
            Verdict(
                judge_model="judge",
                rubric="goal_only",
                evaluation=evaluation,
                sampling=draw(st.none() | SAMPLING),
            )
        )
    return record


@given(records())
@settings(max_examples=25, deadline=None)
def test_a_record_reads_back_from_its_json(record: EpisodeRecord) -> None:
    assert load_record(record.to_json()) == record
    # A view derived from the record never shows a private action to a non-recipient.
    for entry in record.entries:
        if entry.to is None:
            continue
        for viewer in NAMES:
            if viewer != entry.sender and viewer not in entry.to:
                assert entry.render() not in record.transcript(viewer)


@given(records())
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_store_and_jsonl_give_back_the_same_record(
    store: EpisodeStore, record: EpisodeRecord
) -> None:
    store.client.flushdb()
    store.save_record(record)
    assert store.load(record.episode_id) == record
    first = io.StringIO()
    export_episodes(store, first)
    store.client.flushdb()
    import_episodes(store, first.getvalue().splitlines())
    again = io.StringIO()
    export_episodes(store, again)
    assert again.getvalue() == first.getvalue()
    assert store.load(record.episode_id) == record
