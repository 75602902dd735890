"""Replaying through the runner: a human-written script, or the log of an earlier run.

Replays use scripted agents (``sotopia_are.agents.ScriptedAgent`` playing its actions in
order) — ``social`` never imports ``agents``, so these helpers return the spec and the
actions, and the caller makes the agents::

    spec = script_spec(base_spec, script_text)
    agents = ScriptedAgent.from_script(script_text, spec.agent_names)
    result = await run_episode(spec, agents)

    actions = logged_actions(imported.spec, imported.events)
    agents = [ScriptedAgent(name, actions[name]) for name in imported.spec.agent_names]
    result = await run_episode(imported.spec, agents)   # the same log as the original
"""

from __future__ import annotations

from collections.abc import Iterable

from sotopia_are.messages import AgentAction, ScriptInteraction, parse_script
from sotopia_are.simulation.notification_system import BaseNotificationSystem
from sotopia_are.simulation.types import CompletedEvent

from .conversation_app import ConversationApp
from .entries import conversation_entries
from .spec import EpisodeSpec

__all__ = ["logged_actions", "script_spec"]


def script_spec(spec: EpisodeSpec, script: str | ScriptInteraction) -> EpisodeSpec:
    """``spec`` set up to replay ``script``: each action of the script is one turn, played
    by its speaker (a ``fixed`` turn order), and the episode ends with the script.

    Raises :class:`~sotopia_are.messages.ScriptParseError` for an unreadable script.
    """
    text = script.interactions if isinstance(script, ScriptInteraction) else script
    speakers = [item.speaker for item in parse_script(text, spec.agent_names)]
    if not speakers:
        raise ValueError("the script holds no actions to replay")
    # replace() keeps a spec without an id of its own so (each run gets a fresh one).
    return spec.replace(
        turn_policy="fixed",
        turn_order=speakers,
        max_turns=len(speakers),
        # A script may pause for a while; only its end ends the replay.
        max_stale_turns=len(speakers),
    )


def logged_actions(
    spec: EpisodeSpec, events: Iterable[CompletedEvent], *, app_name: str = "ConversationApp"
) -> dict[str, list[AgentAction]]:
    """Each participant's actions in ``events`` (a run of ``spec``), in log order.

    Played back in order by scripted agents under the same spec, they give the same log.
    """
    notifications = BaseNotificationSystem(ConversationApp(name=app_name).notification_config())
    actions: dict[str, list[AgentAction]] = {name: [] for name in spec.agent_names}
    for entry in conversation_entries(
        events, app_name=app_name, turn_seconds=spec.turn_seconds, notifications=notifications
    ):
        if entry.action is not None:
            actions[entry.sender].append(entry.action)
    return actions
