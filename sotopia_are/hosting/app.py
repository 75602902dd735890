"""`hosting_app`: the participant API and its pages, as a Starlette (ASGI) application.

Endpoints (docs/hosting.md has the bodies): ``GET /api/seat/consent`` the study's
consent/instructions text (read before arriving; by a seat's token or the waiting
room's), ``GET /api/seat`` the seat's view (and the person's arrival),
``POST /api/seat/join`` arrival with a participant id,
``GET /api/seat/changes?since=V`` wait (long-poll) until the view passes version ``V``,
``POST /api/seat/actions`` act, ``POST /api/arrive`` the waiting room (a seat for the
person arriving, by the study's entry token), ``GET /api/monitor`` the sessions; ``GET /join`` and
``GET /monitor`` the pages, ``GET /static/<file>`` their script and style.

Every API request names its seat (or the monitor) by ``Authorization: Bearer <token>``
alone — no cookies, so no request another site makes can carry it (CSRF); a POST must
also be ``application/json``. A missing, unknown or other seat's token is a plain 404
that says nothing more. Every response carries a strict Content-Security-Policy and is
never cached; the pages escape all text (they set ``textContent``, never HTML).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .rate_limit import RateLimiter
from .receipts import CLIENT_ID, Receipts
from .seat import HumanSeat
from .seat_view import seat_view
from .session import HostedSession
from .study import HostedStudy
from .submission import SubmissionError, read_submission
from .tokens import bearer_token

__all__ = ["CONTENT_SECURITY_POLICY", "DEFAULT_CONSENT", "MAX_BODY", "MAX_WAIT", "hosting_app"]

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""Every response's policy: only this server's own script and style, nothing inline."""

MAX_BODY = 16_384
"""The largest request body read (bytes); more is refused with 413."""

MAX_WAIT = 30.0
"""The longest a ``changes`` request waits (seconds), whatever it asks for."""

DEFAULT_CONSENT = (
    "You are about to take part in a research study. You will hold one seat of a "
    "conversation or a game; the other seats may be held by people or by AI agents. "
    "Everything you do here is recorded with the session for research; a participant id "
    "in your link is kept only as a pseudonym. You have {seconds} seconds for each turn: "
    "a turn left unanswered is recorded as a timeout. You may stop at any time by closing "
    "this page."
)
"""The consent/instructions text when the study gives none (``{seconds}``: the turn limit)."""

_STATIC = {
    "seat.js": "text/javascript; charset=utf-8",
    "monitor.js": "text/javascript; charset=utf-8",
    "hosting.css": "text/css; charset=utf-8",
}
_NOT_FOUND = {"error": "not found"}


def hosting_app(study: HostedStudy) -> Starlette:
    """The ASGI app serving ``study``'s participants and monitor."""
    api = _Api(study)
    routes = [
        Route("/api/seat/consent", api.consent, methods=["GET"]),
        Route("/api/seat", api.view, methods=["GET"]),
        Route("/api/seat/join", api.join, methods=["POST"]),
        Route("/api/seat/changes", api.changes, methods=["GET"]),
        Route("/api/seat/actions", api.act, methods=["POST"]),
        Route("/api/arrive", api.arrive, methods=["POST"]),
        Route("/api/monitor", api.monitor, methods=["GET"]),
        Route("/join", _participant_page, methods=["GET"]),
        Route("/monitor", _monitor_page, methods=["GET"]),
        Route("/static/{name}", _static, methods=["GET"]),
        # Browsers ask for it on their own; an answer keeps a 404 out of their console.
        Route("/favicon.ico", _no_icon, methods=["GET"]),
    ]
    app = Starlette(routes=routes)
    app.add_middleware(_SecurityHeaders)
    return app


class _Api:
    def __init__(self, study: HostedStudy) -> None:
        self.study = study
        self.receipts = Receipts()
        self.limiter = RateLimiter(study.actions_per_second, study.action_burst)

    def _seat(self, request: Request) -> tuple[HostedSession, HumanSeat] | None:
        return self.study.locate(bearer_token(request.headers.get("authorization")))

    def _view(self, session: HostedSession, seat: HumanSeat) -> JSONResponse:
        return JSONResponse(seat_view(session, seat, completion_code=self.study.completion_code))

    async def consent(self, request: Request) -> Response:
        """What a person reads before taking the seat; asking is not arriving (the page
        arrives with ``join`` once they agree), ``arrived`` tells a reload they did.
        With the waiting room's entry token it is the text read before ``arrive`` (no
        seat yet: ``seat`` is None)."""
        token = bearer_token(request.headers.get("authorization"))
        found = self.study.locate(token)
        if found is None:
            if not self.study.by_arrival or not self.study.tokens.is_entry(token):
                return JSONResponse(_NOT_FOUND, status_code=404)
            some = next(iter(self.study.sessions[0].seats.values()))
            return JSONResponse(
                {"seat": None, "consent": self._consent_text(some), "arrived": False}
            )
        session, seat = found
        return JSONResponse(
            {
                "seat": seat.name,
                "consent": self._consent_text(seat),
                "arrived": seat.name in session.arrivals,
            }
        )

    def _consent_text(self, seat: HumanSeat) -> str:
        return self.study.consent or DEFAULT_CONSENT.format(seconds=round(seat.turn_timeout))

    async def view(self, request: Request) -> Response:
        found = self._seat(request)
        if found is None:
            return JSONResponse(_NOT_FOUND, status_code=404)
        session, seat = found
        session.arrive(seat.name)
        return self._view(session, seat)

    async def join(self, request: Request) -> Response:
        found = self._seat(request)
        if found is None:
            return JSONResponse(_NOT_FOUND, status_code=404)
        pseudonym = await self._pseudonym(request)
        if isinstance(pseudonym, Response):
            return pseudonym
        session, seat = found
        session.arrive(seat.name, pseudonym)
        return self._view(session, seat)

    async def _pseudonym(self, request: Request) -> str | Response:
        """The pseudonym of the body's ``participant`` id ("" without one), or the error
        response for a body that is not a JSON object or an id that is not a short string."""
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        participant = body.get("participant", "")
        if not isinstance(participant, str) or len(participant) > 200:
            return _error(422, "participant must be a string of at most 200 characters")
        return self.study.pseudonym(participant) if participant else ""

    async def arrive(self, request: Request) -> Response:
        if not self.study.by_arrival or not self.study.tokens.is_entry(
            bearer_token(request.headers.get("authorization"))
        ):
            return JSONResponse(_NOT_FOUND, status_code=404)
        pseudonym = await self._pseudonym(request)
        if isinstance(pseudonym, Response):
            return pseudonym
        given = self.study.assign(pseudonym)
        if given is None:
            return _error(409, "every seat of the study is taken")
        session, seat, token = given
        return JSONResponse(
            {
                "token": token,
                **seat_view(session, seat, completion_code=self.study.completion_code),
            }
        )

    async def changes(self, request: Request) -> Response:
        found = self._seat(request)
        if found is None:
            return JSONResponse(_NOT_FOUND, status_code=404)
        try:
            since = int(request.query_params.get("since", "-1"))
            wait = float(request.query_params.get("timeout", str(MAX_WAIT)))
        except ValueError:
            return _error(400, "since must be an integer and timeout a number")
        session, seat = found
        session.arrive(seat.name)
        await session.wait_for_change(seat.name, since, min(max(wait, 0.0), MAX_WAIT))
        return self._view(session, seat)

    async def act(self, request: Request) -> Response:
        found = self._seat(request)
        if found is None:
            return JSONResponse(_NOT_FOUND, status_code=404)
        session, seat = found
        key = (session.number, seat.name)
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        client_id = body.get("client_id")
        if not isinstance(client_id, str) or not CLIENT_ID.fullmatch(client_id):
            return _error(400, "client_id must be 1 to 64 letters, digits, '_', '.', ':' or '-'")
        first = self.receipts.get(key, client_id)
        if first is not None:
            status, answer = first
            return JSONResponse({**answer, "repeat": True}, status_code=status)
        # Only new submissions count against the limit: a repeat does nothing.
        wait = self.limiter.allow(key)
        if wait:
            return JSONResponse(
                {"error": "too many actions; wait a moment"},
                status_code=429,
                headers={"Retry-After": str(max(1, round(wait)))},
            )
        status, answer = self._submit(seat, body)
        self.receipts.put(key, client_id, status, answer)
        return JSONResponse({**answer, "repeat": False}, status_code=status)

    def _submit(self, seat: HumanSeat, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        turn = seat.turn
        if turn is None:
            return 409, {"accepted": False, "error": "it is not your turn"}
        wanted = body.get("turn")
        if wanted is not None and wanted != turn.turn_number:
            return 409, {"accepted": False, "error": f"turn {wanted} is over"}
        action = body.get("action")
        if not isinstance(action, dict):
            return 422, {"accepted": False, "error": "action must be an object"}
        try:
            chosen = read_submission(turn, action)
        except SubmissionError as error:
            return 422, {"accepted": False, "error": str(error)}
        return 200, {"accepted": True, "turn": seat.submit(chosen)}

    async def monitor(self, request: Request) -> Response:
        if not self.study.tokens.is_monitor(bearer_token(request.headers.get("authorization"))):
            return JSONResponse(_NOT_FOUND, status_code=404)
        return JSONResponse({"sessions": [_session_row(s) for s in self.study.sessions]})


def _session_row(session: HostedSession) -> dict[str, Any]:
    """What the monitor shows of a session (its runner's side: who is where, not what
    anyone said)."""
    start = session.started_at
    return {
        "session": session.number,
        "episode_id": session.episode_id,
        "state": session.state.value,
        "entries": len(session.entries),
        "error": session.error,
        "seats": [
            {
                "name": name,
                "player": session.labels[name],
                "arrived": name in session.arrivals,
                "waited_s": (
                    round(start - session.arrivals[name].at, 3)
                    if start is not None and name in session.arrivals
                    else None
                ),
                "filled": name in session.filled,
                "acting": seat.turn is not None if (seat := session.seats.get(name)) else None,
                "timeouts": len(seat.timeouts) if seat else None,
            }
            for name in session.spec.agent_names
        ],
    }


async def _json_body(request: Request) -> dict[str, Any] | Response:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json":
        return _error(415, "send the body as application/json")
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            return _error(413, f"the body may have at most {MAX_BODY} bytes")
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError):
        return _error(400, "the body is not JSON")
    if not isinstance(body, dict):
        return _error(400, "the body must be a JSON object")
    return body


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _asset(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


async def _participant_page(request: Request) -> Response:
    return Response(_asset("participant.html"), media_type="text/html; charset=utf-8")


async def _monitor_page(request: Request) -> Response:
    return Response(_asset("monitor.html"), media_type="text/html; charset=utf-8")


async def _no_icon(request: Request) -> Response:
    return Response(status_code=204)


async def _static(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in _STATIC:
        return JSONResponse(_NOT_FOUND, status_code=404)
    return Response(_asset(name), media_type=_STATIC[name])


class _SecurityHeaders:
    """Adds the security headers to every response (pages, API, errors alike)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (name, value)
                    for name, value in message.get("headers", [])
                    if name.lower() not in _HEADER_NAMES
                ]
                message["headers"] = headers + _HEADERS
            await send(message)

        await self.app(scope, receive, with_headers)


_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]
_HEADER_NAMES = {name for name, _ in _HEADERS}
