"""Social episodes on the event kernel: conversation, visibility, turn-taking, the runner.

Run an episode with :func:`run_episode` (or many with :func:`run_episodes`) from an
:class:`EpisodeSpec` and agents satisfying :class:`SocialAgent`. Every agent action is one
AGENT event of a :class:`ConversationApp`; every view an agent gets, and every transcript,
is derived from the event log through :func:`is_visible`. This layer imports only
``messages``, ``simulation`` and the LLM layer's value types (``Usage``, ``LLMCall``).
"""

from .asking import AgentFault, ask_agents
from .cast import agents_by_name
from .conversation_app import ENVIRONMENT_SENDER, NOTIFIED_TOOLS, ConversationApp
from .entries import (
    ConversationEntry,
    EntrySink,
    conversation_entries,
    entry_of,
    render_entries,
)
from .export import ImportedEpisode, episode_trace, export_episode, import_episode
from .game_rules import (
    EndCondition,
    GameAction,
    GameRules,
    Payoff,
    Phase,
    Role,
    RoleActors,
    TeamActors,
)
from .live_episode import LiveEpisode
from .protocol import AgentTurn, CallRecord, MoveOption, SocialAgent
from .replay import logged_actions, script_spec
from .result import EpisodeResult
from .runner import AgentFactory, run_episode, run_episodes
from .scenario import EpisodeScenario
from .sinks import EpisodeSink, EventCallback, Sink
from .spec import (
    ALL_ACTION_TYPES,
    HIDDEN_GOAL,
    EpisodeSpec,
    ScheduledEnvEvent,
    TurnPolicyName,
    fresh_episode_id,
)
from .status import EpisodeStatus
from .termination import (
    EpisodeState,
    MaxTurnsAndStaleRule,
    TerminationRule,
    default_rule,
    is_stale,
)
from .turn_taking import (
    FixedOrder,
    RandomOrder,
    RoundRobin,
    Simultaneous,
    TurnPolicy,
    make_turn_policy,
)
from .views import AgentView, EpisodeViews
from .visibility import is_visible

__all__ = [
    "ALL_ACTION_TYPES",
    "ENVIRONMENT_SENDER",
    "HIDDEN_GOAL",
    "NOTIFIED_TOOLS",
    "AgentFactory",
    "AgentFault",
    "AgentTurn",
    "AgentView",
    "CallRecord",
    "ConversationApp",
    "ConversationEntry",
    "EndCondition",
    "EntrySink",
    "EpisodeResult",
    "EpisodeScenario",
    "EpisodeSink",
    "EpisodeSpec",
    "EpisodeState",
    "EpisodeStatus",
    "EpisodeViews",
    "EventCallback",
    "FixedOrder",
    "GameAction",
    "GameRules",
    "ImportedEpisode",
    "LiveEpisode",
    "MaxTurnsAndStaleRule",
    "MoveOption",
    "Payoff",
    "Phase",
    "RandomOrder",
    "Role",
    "RoleActors",
    "RoundRobin",
    "ScheduledEnvEvent",
    "Simultaneous",
    "Sink",
    "SocialAgent",
    "TeamActors",
    "TerminationRule",
    "TurnPolicy",
    "TurnPolicyName",
    "agents_by_name",
    "ask_agents",
    "conversation_entries",
    "default_rule",
    "entry_of",
    "episode_trace",
    "export_episode",
    "fresh_episode_id",
    "import_episode",
    "is_stale",
    "is_visible",
    "logged_actions",
    "make_turn_policy",
    "render_entries",
    "run_episode",
    "run_episodes",
    "script_spec",
]
