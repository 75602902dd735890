"""`HostedStudy`: the sessions of one hosted spec, their seats' tokens and the rules of play.

:meth:`HostedStudy.build` makes ``sessions`` sessions of one spec (each under a fresh
episode id), a :class:`HumanSeat` for each named human seat of each, and the agents of
the other seats (LLM agents on ``models``, or agents of your own from ``agents``). Each
human seat gets its token — or, with a waiting room (``by_arrival``), people arrive
through the study's one entry link and are given the next free seat in order of arrival
(:meth:`HostedStudy.assign`: the first to arrive fill session 1, the next session 2, ...).
The study's monitor has its own token. With ``fill_after``, a human seat still empty that
many seconds after its session's first arrival is played by an LLM agent instead.

With a store, the study is named by its ``tag`` and kept in the store
(:class:`~sotopia_are.hosting.study_log.HostedStudyLog`: its sessions' episode ids and
its tokens' digests). Building the same study again (same spec, human seats and number
of sessions) while one of its sessions is not over RESUMES it: over sessions are shown
as they ended, running ones replay their stored log and go on
(:mod:`sotopia_are.hosting.resume`; :meth:`HostedStudy.start_resumed` starts them), and
the links given out before still open the same seats.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from sotopia_are import SotopiaAreError
from sotopia_are.agents import llm_agents_for
from sotopia_are.evaluation import LLMJudge
from sotopia_are.llm import LLMSession, Sampling
from sotopia_are.social import EpisodeSpec, EpisodeStatus, EpisodeViews, SocialAgent
from sotopia_are.storage import EpisodeStore, RecordNotFoundError
from sotopia_are.studies import fresh_spec

from .resume import Resumption
from .seat import HumanSeat
from .session import HUMAN, HostedSession, SessionState
from .study_log import HostedStudyLog
from .tokens import SeatKey, Tokens

__all__ = ["AgentsFor", "HostedStudy", "JoinLink", "StudyMismatchError"]

AgentsFor = Callable[[EpisodeSpec], Mapping[str, SocialAgent]]
"""Makes the agents of one session's spec (at least those of every non-human seat)."""


class StudyMismatchError(SotopiaAreError, ValueError):
    """The store holds an unfinished hosted study under the tag that plays something else."""


@dataclass(frozen=True)
class JoinLink:
    """Who a link is for (a seat of a session; the waiting room: ``seat`` None and
    ``session`` 0; the monitor: both None) and its secret token."""

    session: int | None
    seat: str | None
    token: str


@dataclass
class _Setup:
    """How to make one session's players (kept to build, resume and fill alike)."""

    humans: list[str]
    models: str | Mapping[str, str] | None
    llm: LLMSession | None
    sampling: Sampling | None
    agents: AgentsFor | None
    fill: bool


@dataclass
class HostedStudy:
    """The sessions of a hosted study, their tokens and its rules of play.

    ``consent`` is the consent/instructions text a person reads before taking a seat
    (empty: :data:`~sotopia_are.hosting.app.DEFAULT_CONSENT`); ``completion_code`` is
    shown to each person once their session is over (a URL as a link to follow);
    ``actions_per_second``/``action_burst`` bound how fast one seat may post actions.
    ``by_arrival`` means people arrive through the waiting room's entry link;
    ``resumed`` lists the numbers of the sessions taken up from the store.
    """

    sessions: list[HostedSession]
    tokens: Tokens
    links: list[JoinLink]
    completion_code: str = ""
    consent: str = ""
    actions_per_second: float = 5.0
    action_burst: int = 10
    by_arrival: bool = False
    store: EpisodeStore | None = None
    tag: str = ""
    humans: list[str] = field(default_factory=list)
    resumed: list[int] = field(default_factory=list)
    log: HostedStudyLog | None = None
    _salt: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    _by_participant: dict[str, tuple[SeatKey, str]] = field(default_factory=dict)

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
        by_arrival: bool = False,
        fill_after: float | None = None,
        resume: bool = True,
        consent: str = "",
    ) -> HostedStudy:
        """``sessions`` sessions of ``spec`` with a person on each seat in ``humans``.

        The other seats are played by ``agents`` (a factory per session's spec) or else
        LLM agents on ``models`` (one model or ``{seat: model}``) through ``llm``; with
        ``fill_after`` they also fill the human seats left empty (see the module).
        ``by_arrival`` hands out seats through the waiting room instead of a link per
        seat. With ``store`` and ``resume``, an unfinished study stored under ``tag`` is
        resumed (see the module; call :meth:`start_resumed` on the running event loop).

        ValueError for an unknown or repeated human seat, fewer than one session, a
        ``fill_after`` that is not positive, or neither ``agents`` nor ``models`` while
        some seat is not human (or seats are to be filled);
        :class:`StudyMismatchError` when the unfinished study under ``tag`` plays another
        spec, other human seats or another number of sessions.
        """
        _check_humans(spec, humans)
        if sessions < 1:
            raise ValueError(f"sessions must be at least 1, not {sessions}")
        if fill_after is not None and fill_after <= 0:
            raise ValueError(f"fill_after must be positive, not {fill_after}")
        others = [name for name in spec.agent_names if name not in humans]
        needs_models = [*others, *(humans if fill_after is not None else [])]
        if needs_models and agents is None and models is None:
            raise ValueError(f"give models (or agents) for the seats {needs_models}")
        setup = _Setup(list(humans), models, llm, sampling, agents, fill_after is not None)
        fingerprint = _fingerprint(spec, humans, sessions)
        log = _unfinished(store, tag, fingerprint) if store is not None and resume else None
        tokens = Tokens() if log is None else _tokens_of(log)
        built: list[HostedSession] = []
        scenario = log.scenario_id if log is not None else ""
        for number in range(1, sessions + 1):
            if log is None:
                played, scenario = fresh_spec(spec)
            else:
                played = spec.replace(episode_id=log.episodes[number - 1])
            session = _session(number, played, setup, store, tag, scenario, judge)
            session.fill_after = fill_after
            for name in humans:
                session.seats[name] = HumanSeat(
                    name, turn_timeout=turn_timeout, on_change=session.seat_changed
                )
            built.append(session)
        study = cls(
            built,
            tokens,
            [],
            completion_code=completion_code,
            consent=consent,
            by_arrival=by_arrival,
            store=store,
            tag=tag,
            humans=list(humans),
        )
        if log is None:
            if not by_arrival:
                for session in built:
                    for name in humans:
                        token = tokens.issue(SeatKey(session.number, name))
                        study.links.append(JoinLink(session.number, name, token))
            else:
                study.links.append(JoinLink(0, None, tokens.entry))
            study.links.append(JoinLink(None, None, tokens.monitor))
            if store is not None:
                study.log = HostedStudyLog(
                    pk=tag,
                    fingerprint=fingerprint,
                    humans=list(humans),
                    episodes=[s.episode_id for s in built],
                    scenario_id=scenario,
                    monitor=tokens.monitor_digest,
                    entry=tokens.entry_digest,
                    created_at=time.time(),
                )
                study.save_log()
        else:
            study.log = log
            study._take_up(log)
        return study

    def _take_up(self, log: HostedStudyLog) -> None:
        """Set each session as the store holds it: over, to resume, or not begun."""
        assert self.store is not None
        for session in self.sessions:
            try:
                stored = self.store.get_episode(session.episode_id)
            except RecordNotFoundError:
                continue  # it never started: it waits for its people again
            if stored.status in (EpisodeStatus.COMPLETE, EpisodeStatus.FAILED):
                record = self.store.load(session.episode_id)
                session.record = record
                session.state = (
                    SessionState.FINISHED
                    if record.status is EpisodeStatus.COMPLETE
                    else SessionState.FAILED
                )
                views = EpisodeViews.of_exported(session.spec, record.events)
                session.entries = list(views.entries)
                continue
            if stored.status is EpisodeStatus.RUNNING:
                # This server is the study's only one: a running session is a dead one's.
                self.store.mark_incomplete(
                    session.episode_id, "interrupted: the server stopped; resumed"
                )
            events = self.store.read_events(session.episode_id)
            calls = self.store.read_calls(session.episode_id)
            session.resume_from(Resumption.of_stored(session.spec, events, stored.metadata, calls))
            self.resumed.append(session.number)

    def start_resumed(self) -> None:
        """Start the resumed sessions (on the running event loop): each replays its log
        and then asks its seats as usual."""
        for number in self.resumed:
            session = self.sessions[number - 1]
            if session.state is SessionState.WAITING:
                session.start()

    def save_log(self) -> None:
        """Write the study's log to the store (its sessions and token digests)."""
        if self.store is None or self.log is None:
            return
        self.log = self.log.replace(seats=HostedStudyLog.seat_entries(self.tokens.seat_digests()))
        self.store.save(self.log)

    def locate(self, token: str | None) -> tuple[HostedSession, HumanSeat] | None:
        """The session and seat ``token`` opens, or None."""
        key = self.tokens.seat(token)
        if key is None:
            return None
        session = self.sessions[key.session - 1]
        return session, session.seats[key.seat]

    def assign(self, participant: str = "") -> tuple[HostedSession, HumanSeat, str] | None:
        """The waiting room: a seat for the person arriving now (with the pseudonym
        ``participant`` of their crowd-work id, if any), its session and its new token —
        the next human seat no one holds of the first session still waiting (the first
        people to arrive fill session 1, ...); the person is noted as arrived. The same
        pseudonym again gets the same seat. None when every seat is taken."""
        if participant and participant in self._by_participant:
            key, token = self._by_participant[participant]
            session = self.sessions[key.session - 1]
            return session, session.seats[key.seat], token
        taken = set(self.tokens.seat_digests().values())
        for session in self.sessions:
            if session.state is not SessionState.WAITING:
                continue
            for name in self.humans:
                key = SeatKey(session.number, name)
                if key in taken or name in session.filled:
                    continue
                token = self.tokens.issue(key)
                self.save_log()
                if participant:
                    self._by_participant[participant] = (key, token)
                session.arrive(name, participant)
                return session, session.seats[name], token
        return None

    def pseudonym(self, participant: str) -> str:
        """A participant id as the record keeps it: a keyed hash (the key is this run's
        secret), the same id giving the same pseudonym within the study."""
        digest = hmac.new(self._salt, participant.encode("utf-8"), hashlib.sha256)
        return digest.hexdigest()[:16]


def _fingerprint(spec: EpisodeSpec, humans: Sequence[str], sessions: int) -> str:
    """What identifies a study's play: the spec's content, its human seats and sessions."""
    text = json.dumps([spec.content_id(), list(humans), sessions])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _unfinished(store: EpisodeStore, tag: str, fingerprint: str) -> HostedStudyLog | None:
    """The study stored under ``tag`` if one of its sessions is not over (None if there
    is none, or it is over: a new study then replaces it)."""
    try:
        log = store.get(HostedStudyLog, tag)
    except RecordNotFoundError:
        return None
    over = (EpisodeStatus.COMPLETE, EpisodeStatus.FAILED)
    statuses: list[EpisodeStatus | None] = []
    for episode_id in log.episodes:
        try:
            statuses.append(store.get_episode(episode_id).status)
        except RecordNotFoundError:
            statuses.append(None)
    if all(status in over for status in statuses):
        return None
    if log.fingerprint != fingerprint:
        raise StudyMismatchError(
            f"the store holds an unfinished hosted study under the tag {tag!r} that plays "
            f"another spec, other human seats ({log.humans}) or another number of sessions "
            f"({len(log.episodes)}); host it as it was to resume it, or pick another --tag"
        )
    return log


def _tokens_of(log: HostedStudyLog) -> Tokens:
    return Tokens.restored(monitor=log.monitor, entry=log.entry, seats=log.seat_keys())


def _session(
    number: int,
    played: EpisodeSpec,
    setup: _Setup,
    store: EpisodeStore | None,
    tag: str,
    scenario: str,
    judge: LLMJudge | None,
) -> HostedSession:
    others = [name for name in played.agent_names if name not in setup.humans]
    needed = [*others, *(setup.humans if setup.fill else [])]
    players = _players(played, needed, setup.models, setup.llm, setup.sampling, setup.agents)
    labels = {
        name: HUMAN if name in setup.humans else _label(name, setup.models, players[name])
        for name in played.agent_names
    }
    fillers = {name: players[name] for name in setup.humans if setup.fill}
    return HostedSession(
        number=number,
        spec=played,
        seats={},
        agents={name: players[name] for name in others},
        labels=labels,
        store=store,
        tag=tag,
        scenario_id=scenario,
        judge=judge,
        fillers=fillers,
        filler_labels={name: _label(name, setup.models, agent) for name, agent in fillers.items()},
    )


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
    others: list[str],  # the seats that need an agent
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
