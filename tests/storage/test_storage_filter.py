"""One episode filter: the index answers what reading every episode would, for any filter,
and a filter is one value that the listing methods take as keywords."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sotopia_are.storage import EpisodeFilter, EpisodeLog, EpisodeStatus, EpisodeStore

TAGS = ["t1", "t2"]
SCENARIOS = ["plot", "party"]
MODELS = ["gpt-x", "claude", ""]
AGENTS = ["Ann", "Bo", "Cy"]
ENDINGS = [None, EpisodeStatus.COMPLETE, EpisodeStatus.FAILED, EpisodeStatus.INCOMPLETE]

EPISODES = st.lists(
    st.tuples(
        st.sampled_from(TAGS),
        st.sampled_from(SCENARIOS),
        st.lists(st.sampled_from(AGENTS), min_size=2, max_size=2, unique=True),
        st.lists(st.sampled_from(MODELS), min_size=2, max_size=2),
        st.sampled_from(ENDINGS),
    ),
    max_size=6,
)
FILTERS = st.fixed_dictionaries(
    {},
    optional={
        "tag": st.none() | st.sampled_from([*TAGS, "nope"]),
        "scenario": st.none() | st.sampled_from(SCENARIOS),
        "model": st.none() | st.sampled_from(MODELS[:2]),
        "agent": st.none() | st.sampled_from(AGENTS),
        "status": st.none()
        | st.sampled_from(list(EpisodeStatus))
        | st.sampled_from([s.value for s in EpisodeStatus]),
    },
)


def matches(episode: EpisodeLog, where: EpisodeFilter) -> bool:
    """The filter's meaning, read off the record itself."""
    status = where.get("status")
    return (
        where.get("tag") in (None, episode.tag)
        and where.get("scenario") in (None, episode.scenario_id)
        and (where.get("model") is None or where.get("model") in episode.models)
        and (where.get("agent") is None or where.get("agent") in episode.agents)
        and (status is None or EpisodeStatus(status) is episode.status)
    )


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(episodes=EPISODES, where=FILTERS, limit=st.none() | st.integers(min_value=1, max_value=3))
def test_a_filter_lists_the_episodes_it_matches_oldest_first(
    store: EpisodeStore,
    episodes: list[tuple[str, str, list[str], list[str], EpisodeStatus | None]],
    where: EpisodeFilter,
    limit: int | None,
) -> None:
    store.client.flushdb()
    clock = iter(range(1000))
    store._clock = lambda: float(next(clock))
    for number, (tag, scenario, agents, models, ending) in enumerate(episodes):
        pk = f"e{number}"
        store.start_episode(
            EpisodeLog(pk=pk, tag=tag, scenario_id=scenario, agents=agents, models=models)
        )
        if ending is EpisodeStatus.INCOMPLETE:
            store.mark_incomplete(pk)
        elif ending is not None:
            store.finish_episode(pk, status=ending)
    expected = [e.pk for e in store.all(EpisodeLog) if matches(e, where)]
    expected.sort(key=lambda pk: int(pk[1:]))  # started in this order, one clock tick apart

    assert [e.pk for e in store.list_episodes(limit=limit, **where)] == expected[:limit]
    assert store.episode_ids(**where) == expected
    assert [s.episode_id for s in store.summaries(limit=limit, **where)] == expected[:limit]


def test_a_filter_is_one_value_the_listing_methods_take(store: EpisodeStore) -> None:
    store.start_episode(EpisodeLog(pk="a", tag="t1", agents=["Ann", "Bo"]))
    store.start_episode(EpisodeLog(pk="b", tag="t2", agents=["Ann", "Bo"]))
    where: EpisodeFilter = {"tag": "t2", "status": "running"}
    assert store.episode_ids(**where) == ["b"]
    assert [e.pk for e in store.list_episodes(**where)] == ["b"]


def test_a_keyword_that_is_no_filter_is_refused_before_anything_is_read(
    store: EpisodeStore,
) -> None:
    with pytest.raises(TypeError, match=r"'tga'.*tag, scenario, model, agent, status"):
        store.episode_ids(tga="t1")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="'finished'"):
        store.list_episodes(status="finished")
