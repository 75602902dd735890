"""`script_context`: the scenario, participants, backgrounds and goals of a written script.

A script is rated against its context: a separate file (an episode spec, or a
background with Sotopia's ``p1_*``/``p2_*`` fields) or the script's own preamble, as
Sotopia's transcripts carry it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from sotopia_are.messages import ScriptBackground, ScriptParseError, parse_background
from sotopia_are.social import EpisodeSpec

from .errors import StudyInputError

__all__ = ["script_context"]

_NEEDS_CONTEXT = (
    "give its context (an episode spec or background JSON with the scenario, each agent's "
    "background and goal), or open the script with it: 'Scenario: …', 'Participants: A and "
    'B\', then "A\'s background: …" and "A\'s goal: …" lines'
)


def script_context(
    script: str,
    context: str | None = None,
    *,
    names: Sequence[str] | None = None,
    episode_id: str = "script",
) -> EpisodeSpec:
    """The spec of ``script``'s episode, ``episode_id`` unless ``context`` is a spec with an
    ``episode_id`` of its own: from ``context`` (the JSON text of an episode spec or a
    background) when given, else from the script's preamble; ``names``, if given, must
    be its participants. ``ValueError`` saying what is missing or wrong."""
    if context is not None:
        spec = _from_json(context, episode_id)
    else:
        try:
            background = parse_background(script, list(names) if names else None)
        except ScriptParseError as error:
            raise StudyInputError(f"cannot read the script's context: {error}") from None
        if background is None:
            raise StudyInputError(
                f"the script has no context before its first turn: {_NEEDS_CONTEXT}"
            )
        spec = EpisodeSpec.from_background(background, episode_id)
    if names is not None and list(names) != spec.agent_names:
        raise StudyInputError(
            f"the participants {', '.join(names)} do not match the context's: "
            f"{', '.join(spec.agent_names)}"
        )
    return spec


def _from_json(text: str, episode_id: str) -> EpisodeSpec:
    try:
        spec = EpisodeSpec.model_validate_json(text)
    except ValidationError as as_spec:
        try:
            background = ScriptBackground.model_validate_json(text)
        except ValidationError:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in item['loc']) or '(root)'}: {item['msg']}"
                for item in as_spec.errors()
            )
            raise StudyInputError(
                f"the context is neither an episode spec nor a background: {problems}"
            ) from None
        return EpisodeSpec.from_background(background, episode_id)
    # A spec without an id of its own (a scenario file) becomes episode ``episode_id``.
    return spec if spec.id_given else spec.replace(episode_id=episode_id)
