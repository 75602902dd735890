"""`HostedStudy`: the sessions of one hosted spec, their seats' tokens and the rules of play.

:meth:`HostedStudy.build` makes ``sessions`` sessions of one spec (each under a fresh
episode id), a :class:`HumanSeat` for each named human seat of each, and the agents of
the other seats (LLM agents on ``models``, or agents of your own from ``agents``). Each
human seat gets its token; the study's monitor its own.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from sotopia_are.agents import llm_agents_for
from sotopia_are.evaluation import LLMJudge
from sotopia_are.llm import LLMSession, Sampling
from sotopia_are.social import EpisodeSpec, SocialAgent
from sotopia_are.storage import EpisodeStore
from sotopia_are.studies import fresh_spec

from .seat import HumanSeat
from .session import HUMAN, HostedSession
from .tokens import SeatKey, Tokens

__all__ = ["AgentsFor", "HostedStudy", "JoinLink"]

AgentsFor = Callable[[EpisodeSpec], Mapping[str, SocialAgent]]
"""Makes the agents of one session's spec (at least those of every non-human seat)."""


@dataclass(frozen=True)
class JoinLink:
    """Who a link is for (a seat of a session, or ``monitor``) and its secret token."""

    session: int | None
    seat: str | None
    token: str


@dataclass
class HostedStudy:
    """The sessions of a hosted study, their tokens and its rules of play.

    ``consent`` is the consent/instructions text a person reads before taking a seat
    (empty: :data:`~sotopia_are.hosting.app.DEFAULT_CONSENT`); ``completion_code`` is
    shown to each person once their session is over (a URL as a link to follow);
    ``actions_per_second``/``action_burst`` bound how fast one seat may post actions.
    """

    sessions: list[HostedSession]
    tokens: Tokens
    links: list[JoinLink]
    completion_code: str = ""
    consent: str = ""
    actions_per_second: float = 5.0
    action_burst: int = 10
    _salt: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    @classmethod
    def build(
        cls,
        spec: EpisodeSpec,
        humans: Sequence[str],
        *,
        models: str | Mapping[str, str] | None = None,
        llm: LLMSession | None = None,
        sampling: Sampling | None = None,
        agents: AgentsFor | None = None,
        sessions: int = 1,
        store: EpisodeStore | None = None,
        tag: str = "",
        judge: LLMJudge | None = None,
        turn_timeout: float = 120.0,
        completion_code: str = "",
        consent: str = "",
    ) -> HostedStudy:
        """``sessions`` sessions of ``spec`` with a person on each seat in ``humans``.

        The other seats are played by ``agents`` (a factory per session's spec) or else
        LLM agents on ``models`` (one model or ``{seat: model}``) through ``llm``.
        ValueError for an unknown or repeated human seat, no seat left to a person,
        fewer than one session, or neither ``agents`` nor ``models`` while some seat is
        not human.
        """
        _check_humans(spec, humans)
        if sessions < 1:
            raise ValueError(f"sessions must be at least 1, not {sessions}")
        others = [name for name in spec.agent_names if name not in humans]
        if others and agents is None and models is None:
            raise ValueError(f"give models (or agents) for the seats {others}")
        tokens = Tokens()
        links: list[JoinLink] = []
        built: list[HostedSession] = []
        for number in range(1, sessions + 1):
            played, scenario = fresh_spec(spec)
            players = _players(played, others, models, llm, sampling, agents)
            labels = {
                name: HUMAN if name in humans else _label(name, models, players[name])
                for name in played.agent_names
            }
            session = HostedSession(
                number=number,
                spec=played,
                seats={},
                agents={name: players[name] for name in others},
                labels=labels,
                store=store,
                tag=tag,
                scenario_id=scenario,
                judge=judge,
            )
            for name in humans:
                session.seats[name] = HumanSeat(
                    name, turn_timeout=turn_timeout, on_change=session.seat_changed
                )
                links.append(JoinLink(number, name, tokens.issue(SeatKey(number, name))))
            built.append(session)
        links.append(JoinLink(None, None, tokens.monitor))
        return cls(built, tokens, links, completion_code=completion_code, consent=consent)

    def locate(self, token: str | None) -> tuple[HostedSession, HumanSeat] | None:
        """The session and seat ``token`` opens, or None."""
        key = self.tokens.seat(token)
        if key is None:
            return None
        session = self.sessions[key.session - 1]
        return session, session.seats[key.seat]

    def pseudonym(self, participant: str) -> str:
        """A participant id as the record keeps it: a keyed hash (the key is this run's
        secret), the same id giving the same pseudonym within the study."""
        digest = hmac.new(self._salt, participant.encode("utf-8"), hashlib.sha256)
        return digest.hexdigest()[:16]


def _check_humans(spec: EpisodeSpec, humans: Sequence[str]) -> None:
    if not humans:
        raise ValueError("name at least one human seat")
    for name in humans:
        if name not in spec.agent_names:
            raise ValueError(f"{name!r} is not a seat of the episode; seats: {spec.agent_names}")
    if len(set(humans)) != len(humans):
        raise ValueError(f"a human seat is named twice: {list(humans)}")


def _players(
    spec: EpisodeSpec,
    others: list[str],
    models: str | Mapping[str, str] | None,
    llm: LLMSession | None,
    sampling: Sampling | None,
    agents: AgentsFor | None,
) -> Mapping[str, SocialAgent]:
    if not others:
        return {}
    if agents is not None:
        made = agents(spec)
        missing = [name for name in others if name not in made]
        if missing:
            raise ValueError(f"the agents factory made no agent for {missing}")
        return made
    if models is None:
        raise ValueError(f"give models (or agents) for the seats {others}")
    chosen: str | dict[str, str]
    if isinstance(models, str):
        chosen = models
    else:
        missing = [name for name in others if name not in models]
        if missing:
            raise ValueError(f"no model for the seats {missing}")
        # llm_agents_for makes an agent for every seat; the human seats' go unused.
        chosen = {name: models.get(name, models[others[0]]) for name in spec.agent_names}
    everyone = llm_agents_for(spec, chosen, llm or LLMSession(), sampling=sampling)
    return {agent.name: agent for agent in everyone}


def _label(name: str, models: str | Mapping[str, str] | None, agent: SocialAgent) -> str:
    if isinstance(models, str):
        return models
    if models is not None and name in models:
        return models[name]
    return type(agent).__name__
