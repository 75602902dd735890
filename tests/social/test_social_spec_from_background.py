"""EpisodeSpec.from_background: a Sotopia background becomes a playable spec."""

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
