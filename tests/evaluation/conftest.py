"""Fixtures of the evaluation tests: judge sessions, test data."""

from typing import Any

import pytest

from sotopia_are.messages import ScriptBackground


@pytest.fixture
def session_config(session_config: dict[str, Any]) -> dict[str, Any]:
    """The test-wide settings with the schema in the prompt, as most local servers need."""
    return {**session_config, "output_mode": "prompt"}


@pytest.fixture
def bakery() -> ScriptBackground:
    """The background of examples/scripts/bakery_negotiation.txt."""
    return ScriptBackground(
        scenario=(
            "A small neighbourhood bakery, ten minutes before closing. A café owner wants "
            "to buy the day's unsold bread in bulk."
        ),
        agent_names=["Mara Quinn", "Teo Alvarez"],
        agent_backgrounds=[
            "Mara Quinn owns the bakery and hates throwing bread away, but her margins are thin.",
            "Teo Alvarez runs a café two streets away and is opening a sandwich menu next week.",
        ],
        agent_goals=[
            "Sell the unsold loaves for at least 60% of the shelf price.",
            "Secure a standing order for day-old bread at half price or less.",
        ],
    )
