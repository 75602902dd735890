"""Render actions as the canonical script text that `parse_script` reads back."""

from collections.abc import Iterable

from .action import AgentAction
from .parser import unreadable_speech

__all__ = ["render_action", "render_script"]


def render_action(speaker: str, action: AgentAction) -> str:
    """One action as Sotopia prints it: ``Name said: "…"``, ``Name [action] …``.

    Raises `ValueError` naming the action when its speech could not be read back as
    itself from a script (a line of it would start a new turn, or read as another
    action after a line that ends in a quote).
    """
    if action.action_type == "speak" and (reason := unreadable_speech(action.argument)):
        raise ValueError(
            f"cannot render {speaker}'s speech {action.argument!r} as script text that reads "
            f"back the same: {reason}"
        )
    return f"{speaker} {action.to_natural_language()}"


def render_script(actions: Iterable[tuple[str, AgentAction]], *, first_turn: int = 1) -> str:
    """The script ``Turn #N\\nName said: "…"\\n…``, one numbered turn per action.

    `parse_script` reads it back as the same actions, except that the argument of a
    ``none`` or ``leave`` action is not part of the script (Sotopia renders neither) and
    reads back as ``""``. Raises `ValueError` as `render_action` does rather than write a
    script that reads back differently.
    """
    script = "".join(
        f"Turn #{number}\n{render_action(speaker, action)}\n"
        for number, (speaker, action) in enumerate(actions, start=first_turn)
    )
    # The parser drops one `,` at the very end of a script (an artifact of transcripts
    # exported from JSON lists), so a last line that really ends in `,` gets a second one.
    if script.endswith(",\n"):
        script = script[:-1] + ",\n"
    return script
