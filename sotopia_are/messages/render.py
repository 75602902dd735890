"""Render actions as the canonical script text that `parse_script` reads back."""

from collections.abc import Iterable

from .action import AgentAction

__all__ = ["render_action", "render_script"]


def render_action(speaker: str, action: AgentAction) -> str:
    """One action line as Sotopia prints it: ``Name said: "…"``, ``Name [action] …``."""
    return f"{speaker} {action.to_natural_language()}"


def render_script(actions: Iterable[tuple[str, AgentAction]], *, first_turn: int = 1) -> str:
    """The script ``Turn #N\\nName said: "…"\\n…``, one numbered turn per action."""
    return "".join(
        f"Turn #{number}\n{render_action(speaker, action)}\n"
        for number, (speaker, action) in enumerate(actions, start=first_turn)
    )
