"""EpisodeSpec.from_background: a Sotopia background becomes a playable spec."""

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
