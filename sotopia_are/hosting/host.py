"""`host` / `ahost`: serve a hosted study until its sessions are over.

Builds a :class:`HostedStudy` of the spec, serves :func:`hosting_app` with uvicorn (no
access log: a token must never reach a log, though it is never in a URL the server sees
anyway), announces one line per human seat ``join <seat>: <url>`` and ``monitor: <url>``,
and returns the sessions' records once every session is over.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sotopia_are import SotopiaAreError
from sotopia_are.evaluation import LLMJudge
from sotopia_are.llm import LLMSession, Sampling, apreflight
from sotopia_are.record import EpisodeRecord
from sotopia_are.social import EpisodeSpec
from sotopia_are.storage import EpisodeStore
from sotopia_are.studies.preflight import agent_uses, judge_uses
from sotopia_are.studies.twins import twin_of

from .app import hosting_app
from .session import SessionState
from .study import AgentsFor, HostedStudy

__all__ = ["ExposedHostWarning", "ahost", "host", "join_lines"]


class ExposedHostWarning(SotopiaAreError, UserWarning):
    """The study is served on an address other machines may reach."""


def join_lines(study: HostedStudy, base_url: str) -> list[str]:
    """The lines announcing ``study``'s links at ``base_url`` (its root, with any
    reverse-proxy prefix, without a trailing slash): ``join <seat>: <url>`` per human seat
    of each session (``join <seat> #<n>: <url>`` with several sessions), then
    ``monitor: <url>``. The token is the URL's fragment, which browsers never send."""
    several = len(study.sessions) > 1
    lines = []
    for number in study.resumed:
        session = study.sessions[number - 1]
        replayed = len(session.resumption.events) if session.resumption else 0
        lines.append(f"resumed session {number}: {replayed} stored events replayed")
    if study.log is not None and not study.links:
        lines.append(
            f"resumed study {study.tag!r} at {base_url}: the links given before open the "
            "same seats (and the same monitor)"
        )
    for link in study.links:
        if link.session == 0:
            lines.append(f"waiting room: {base_url}/join#e={link.token}")
        elif link.seat is None:
            lines.append(f"monitor: {base_url}/monitor#t={link.token}")
        else:
            label = f"{link.seat} #{link.session}" if several else link.seat
            lines.append(f"join {label}: {base_url}/join#t={link.token}")
    return lines


async def ahost(
    spec: EpisodeSpec,
    humans: Sequence[str],
    *,
    models: str | Mapping[str, str] | None = None,
    llm: LLMSession | None = None,
    sampling: Sampling | None = None,
    agents: AgentsFor | None = None,
    sessions: int = 1,
    store: EpisodeStore | None = None,
    tag: str = "hosted",
    judge: LLMJudge | None = None,
    turn_timeout: float = 120.0,
    completion_code: str = "",
    by_arrival: bool = False,
    fill_after: float | None = None,
    resume: bool = True,
    consent: str = "",
    host: str = "127.0.0.1",
    port: int = 8000,
    root_path: str = "",
    public_url: str | None = None,
    preflight: bool = True,
    on_line: Callable[[str], None] = print,
) -> list[EpisodeRecord]:
    """:func:`host` for code inside an event loop (same arguments)."""
    import uvicorn

    study = HostedStudy.build(
        spec,
        humans,
        models=models,
        llm=llm,
        sampling=sampling,
        agents=agents,
        sessions=sessions,
        store=store,
        tag=tag,
        judge=judge,
        turn_timeout=turn_timeout,
        completion_code=completion_code,
        by_arrival=by_arrival,
        fill_after=fill_after,
        resume=resume,
        consent=consent,
    )
    if preflight:
        uses = [use for s in study.sessions for use in agent_uses(s.agents)]
        await apreflight([*uses, *judge_uses([judge] if judge else [])])
    if not _is_loopback(host):
        warnings.warn(
            f"serving on {host}: other machines may reach the study; only the tokens keep "
            "seats apart — put it behind HTTPS",
            ExposedHostWarning,
            stacklevel=2,
        )
    root_path = root_path.rstrip("/")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.create_server((host, port), family=family)
    config = uvicorn.Config(
        hosting_app(study),
        lifespan="off",
        log_config=None,
        log_level="warning",
        access_log=False,  # belt and braces: no token is in a URL, but no request is logged
        root_path=root_path,
        proxy_headers=bool(root_path),
    )
    server = uvicorn.Server(config)
    if public_url is None:
        bound, bound_port = listener.getsockname()[:2]
        shown = f"[{bound}]" if ":" in bound else bound
        public_url = f"http://{shown}:{bound_port}{root_path}"
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    study.start_resumed()
    try:
        for line in join_lines(study, public_url.rstrip("/")):
            on_line(line)
        while any(s.state in (SessionState.WAITING, SessionState.RUNNING) for s in study.sessions):
            if serving.done():
                break
            await asyncio.sleep(0.2)
        # Let the pages fetch the final state before the server goes.
        await asyncio.sleep(1.0)
    finally:
        for session in study.sessions:
            await session.stop()
        server.should_exit = True
        await serving
        listener.close()
    return [s.record for s in study.sessions if s.record is not None]


@twin_of(ahost)
def host(*args: Any, **kwargs: Any) -> list[EpisodeRecord]:
    """Host ``sessions`` sessions of ``spec`` with people on the seats ``humans`` until
    they are all over; their records (a failed session's, if it made one).

    The other seats are LLM agents on ``models`` through ``llm`` (or agents from
    ``agents``); each session is stored in ``store`` under ``tag`` as it is played (human
    seats labelled ``"human"`` in ``record.models``) and rated by ``judge`` when given. A
    turn left unanswered for ``turn_timeout`` seconds is recorded as a timeout
    (:mod:`sotopia_are.hosting.seat`). With ``by_arrival`` people arrive through one
    waiting-room link and are seated in order of arrival; with ``fill_after``, a human
    seat still empty that many seconds after its session's first arrival is played by an
    agent on ``models`` (the store's metadata names the filled seats). With ``store`` and
    ``resume``, an unfinished study stored under ``tag`` (the same spec, human seats and
    sessions) is resumed: its running sessions replay their stored logs and go on, the
    links given before still work (:mod:`sotopia_are.hosting.study`).
    Each person first reads ``consent`` (the study's
    consent/instructions text; empty: a default) and takes the seat by agreeing; at the
    end they are shown ``completion_code`` (a URL as a link to follow). It serves on
    ``host``:``port`` — only this machine by default; any other address warns
    (:class:`ExposedHostWarning`) — with ``root_path`` the prefix a reverse proxy strips,
    and ``public_url`` the address people reach it at (default ``http://host:port`` +
    ``root_path``). ``on_line`` gets the join and monitor lines (:func:`join_lines`).

    Raises:
        ValueError: A human seat that is not one of the spec's, or no models/agents for
            the others (or for filling); a
            :class:`~sotopia_are.hosting.study.StudyMismatchError` when the unfinished
            study under ``tag`` plays something else.
        sotopia_are.llm.ConfigurationError: Unless ``preflight`` is false, a model of the
            agents or the judge cannot be called as configured (nothing stored).
        OSError: The address cannot be bound.
    """
    return asyncio.run(ahost(*args, **kwargs))


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
