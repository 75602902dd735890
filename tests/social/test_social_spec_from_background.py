"""EpisodeSpec.from_background: a Sotopia background becomes a playable spec."""

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sotopia_are.messages import ScriptBackground
from sotopia_are.social import EpisodeSpec


def test_a_two_participant_background_becomes_a_spec_with_default_rules() -> None:
    background = ScriptBackground(
        scenario="A bakery at closing time",
        p1_name="Mara Quinn",
        p2_name="Teo Alvarez",
        p1_background="Baker",
        p2_background="Restaurateur",
        p1_goal="Sell at a fair price",
        p2_goal="Buy cheaply",
    )
    spec = EpisodeSpec.from_background(background, "bakery-1")
    assert spec.episode_id == "bakery-1"
    assert spec.agent_names == ["Mara Quinn", "Teo Alvarez"]
    assert spec.agent_goals == ["Sell at a fair price", "Buy cheaply"]
    assert spec.background().to_natural_language() == background.to_natural_language()
    assert (spec.max_turns, spec.max_stale_turns, spec.turn_policy) == (20, 2, "round-robin")


@given(
    st.lists(st.text(min_size=1, max_size=6).filter(str.strip), min_size=2, max_size=4),
    st.booleans(),
)
def test_a_viewers_background_is_the_validated_one(names: list[str], omniscient: bool) -> None:
    # background_for is built without validating again (the spec validated its
    # background): the same model as validating its fields.
    try:
        spec = EpisodeSpec(
            scenario="A shared garden",
            agent_names=names,
            agent_backgrounds=[f"{name} gardens" for name in names],
            agent_goals=[f"{name} wants the plot" for name in names],
            omniscient=omniscient,
        )
    except ValueError:
        return  # names a spec refuses (twins, control characters)
    for name in names:
        built = spec.background_for(name)
        validated = ScriptBackground(
            scenario=built.scenario,
            agent_names=list(names),
            agent_backgrounds=list(built.agent_backgrounds),
            agent_goals=list(built.agent_goals),
        )
        assert built == validated
        assert built.model_dump_json() == validated.model_dump_json()
        assert built.model_fields_set == validated.model_fields_set
        assert built.to_natural_language() == validated.to_natural_language()


_NAMES = st.lists(
    st.sampled_from(["Ana", "ana", "Bo", " ", "Cy\x07", "Bo Chen", "bo  chen", "Dee"]),
    min_size=0,
    max_size=4,
)


def _fields(names: list[str], backgrounds: int, goals: int) -> dict[str, Any]:
    return {
        "scenario": "A shared harvest.",
        "agent_names": names,
        "agent_backgrounds": [f"b{i}" for i in range(backgrounds)],
        "agent_goals": [f"g{i}" for i in range(goals)],
    }


@given(names=_NAMES, extra=st.sampled_from([(0, 1), (1, 0), (1, 1)]))
def test_a_spec_background_is_the_validated_background_every_time(
    names: list[str], extra: tuple[int, int]
) -> None:
    # A spec's background is taken of its kept cast after the first that validated: the
    # same model as validating it; a cast that does not validate is never kept, and one
    # that did says nothing of other counts (its spec is refused every time).
    fields = _fields(names, len(names), len(names))
    try:
        expected = ScriptBackground(**fields)
    except ValueError:
        expected = None
    for _ in range(3):
        if expected is None:
            with pytest.raises(ValueError):
                EpisodeSpec(episode_id="e1", **fields)
            continue
        spec = EpisodeSpec(episode_id="e1", **fields)
        background = spec.background()
        assert background == expected
        assert background.model_fields_set == expected.model_fields_set
        assert background.model_dump() == expected.model_dump()
        assert background.agent_names is not spec.agent_names  # the spec's lists not shared
        for viewer in names:
            seen = spec.background_for(viewer)
            assert seen.model_fields_set == expected.model_fields_set
            assert seen.agent_goals == [
                goal if name == viewer else "Unknown"
                for name, goal in zip(names, fields["agent_goals"], strict=True)
            ]
    other = _fields(names, len(names) + extra[0], len(names) + extra[1])
    with pytest.raises(ValueError):
        EpisodeSpec(episode_id="e2", **other)
