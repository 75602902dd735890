"""The entry point: :class:`LLMSession` and its :meth:`~LLMSession.generate`.

A session holds everything a run needs to call models — configuration, prompt templates,
an optional cache, an optional recorder or replayer — and the records of every call it
made. Passing one session object to an episode runner or a judge switches the whole run
into record or replay mode. Each episode (and each agent in it) should call through its
own :meth:`~LLMSession.scoped` child: the scope keeps its records apart and is what a
replay uses to give it back its own answers.

A request no replay or cache answers goes to the network with limits and retries
(:mod:`~sotopia_are.llm.network`); a server that rejects the structured output asked of
it is asked again in a weaker output mode (:mod:`~sotopia_are.llm.output_fallback`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

from pydantic import BaseModel, JsonValue, TypeAdapter

from sotopia_are.llm.accounting import Attempt, LLMCall, ResponseSource, Usage, UsageTally
from sotopia_are.llm.cache import ResponseCache
from sotopia_are.llm.concurrency import CONCURRENCY, ConcurrencyRegistry
from sotopia_are.llm.config import Endpoint, LLMConfig
from sotopia_are.llm.errors import GenerationError, PermanentLLMError, ReplayMissError
from sotopia_are.llm.failures import describe
from sotopia_are.llm.network import as_llm_error, send_with_retries
from sotopia_are.llm.output_fallback import weaker_mode
from sotopia_are.llm.replay import Recorder, Replayer
from sotopia_are.llm.request import LLMRequest, LLMResponse, Message
from sotopia_are.llm.structured import (
    OUTPUT_MODES,
    OutputMode,
    OutputModeMemory,
    OutputValidationError,
    parse_reply,
    resolve_output_mode,
    response_format_for,
    response_format_within,
    schema_text,
)
from sotopia_are.llm.templates import PromptLibrary
from sotopia_are.llm.valid_parts import of_valid_dataclass, of_valid_fields

__all__ = ["Generation", "LLMSession", "generate"]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

_FORMAT_TEMPLATE = "llm/format_instructions.j2"
_REPAIR_TEMPLATE = "llm/repair.j2"


@dataclass(frozen=True)
class Generation(Generic[T]):
    """A call's result: the parsed ``value`` and the ``call`` record."""

    value: T
    call: LLMCall


class LLMSession:
    """Configuration, prompts, cache, record/replay, and the records of every call.

    ``replayer`` answers every request from a recording (no network); ``recorder``
    writes every answered request to a recording; ``cache`` answers repeated requests
    without the network. :meth:`scoped` makes a child session for one episode (or agent,
    or judge sample) that shares all of that, keeps its own records and also reports them
    to its parent.

    ``retain_calls=False`` makes a session that counts the calls reported to it
    (:attr:`call_count`, :meth:`usage`) without keeping them (:attr:`calls` is then
    empty): a long-lived parent, such as a batch worker's, whose episodes' records live
    with the episodes, so its memory stays flat however many episodes it finishes. Its
    scoped children keep theirs as usual.

    The ``SOTOPIA_ARE_*`` environment variables are read on a session's (or its tree's)
    first call to a model, and a provider's key variable (``OPENAI_API_KEY``) on an event
    loop's first request to an endpoint over HTTP: set them before.
    """

    def __init__(
        self,
        config: LLMConfig | None = None,
        *,
        prompts: PromptLibrary | None = None,
        cache: ResponseCache | None = None,
        recorder: Recorder | None = None,
        replayer: Replayer | None = None,
        scope: str | None = None,
        concurrency: ConcurrencyRegistry = CONCURRENCY,
        output_modes: OutputModeMemory = OUTPUT_MODES,
        retain_calls: bool = True,
    ) -> None:
        self.config = config or LLMConfig()
        self.prompts = prompts or PromptLibrary()
        self.cache = cache
        self.recorder = recorder
        self.replayer = replayer
        self.scope = scope
        self.concurrency = concurrency
        self.output_modes = output_modes
        self.retain_calls = retain_calls
        self._calls: list[LLMCall] = []
        self._count = 0
        self._tally = UsageTally()  # the totals of the calls not retained
        self._parent: LLMSession | None = None
        # The endpoint of each (model, api_base, api_key) a call asked for, under the
        # config it was made with; shared with the scoped children (see _endpoint).
        self._endpoints: dict[tuple[str, str | None, str | None], tuple[LLMConfig, Endpoint]] = {}

    @classmethod
    def recording(
        cls,
        path: Path | str,
        config: LLMConfig | None = None,
        *,
        prompts: PromptLibrary | None = None,
        append: bool = False,
    ) -> LLMSession:
        """A session that records every answered request to ``path`` (JSONL); an existing
        file is refused unless ``append`` (see :class:`Recorder`)."""
        return cls(config, prompts=prompts, recorder=Recorder(path, append=append))

    @classmethod
    def replaying(
        cls,
        path: Path | str,
        config: LLMConfig | None = None,
        *,
        prompts: PromptLibrary | None = None,
    ) -> LLMSession:
        """A session that answers only from the recording at ``path``."""
        return cls(config, prompts=prompts, replayer=Replayer(path))

    def scoped(self, scope: str | None = None) -> LLMSession:
        """A child session sharing this one's config, prompts, cache and recorder/replayer,
        with its own records (also reported to this session).

        Its scope is ``scope`` under this session's (``"episode-1"`` then ``"Alice"``
        gives ``"episode-1/Alice"``); with None it keeps this session's scope. Calls are
        recorded with their scope and replayed only to the same scope, so concurrent
        episodes sending identical prompts each get back their own answers.
        """
        label = self.scope if scope is None else _join(self.scope, scope)
        child = LLMSession(
            self.config,
            prompts=self.prompts,
            cache=self.cache,
            recorder=self.recorder,
            replayer=self.replayer,
            scope=label,
            concurrency=self.concurrency,
            output_modes=self.output_modes,
        )
        child._parent = self
        child._endpoints = self._endpoints
        return child

    @property
    def calls(self) -> list[LLMCall]:
        """Every call made through this session (and its scoped children), in order
        (none when it does not retain calls)."""
        return list(self._calls)

    @property
    def call_count(self) -> int:
        """How many calls were made through this session and its children (what
        :attr:`calls` holds, when it retains them)."""
        return self._count

    def usage(self) -> Usage:
        """The totals of every call made through this session and its children."""
        return Usage.of(self._calls) if self.retain_calls else self._tally.usage()

    def close(self) -> None:
        """Close the recorder, if any (a scoped child leaves that to its parent)."""
        if self.recorder is not None and self._parent is None:
            self.recorder.close()

    @overload
    async def generate(
        self,
        model: str,
        template: str,
        variables: Mapping[str, Any] | None = None,
        output_type: None = None,
        *,
        params: Mapping[str, JsonValue] | None = None,
        api_base: str | None = None,
        api_key: str | None = None,
        max_tokens: int | None = None,
    ) -> Generation[str]: ...

    @overload
    async def generate(
        self,
        model: str,
        template: str,
        variables: Mapping[str, Any] | None,
        output_type: type[M],
        *,
        params: Mapping[str, JsonValue] | None = None,
        api_base: str | None = None,
        api_key: str | None = None,
        max_tokens: int | None = None,
    ) -> Generation[M]: ...

    @overload
    async def generate(
        self,
        model: str,
        template: str,
        variables: Mapping[str, Any] | None = None,
        *,
        output_type: type[M],
        params: Mapping[str, JsonValue] | None = None,
        api_base: str | None = None,
        api_key: str | None = None,
        max_tokens: int | None = None,
    ) -> Generation[M]: ...

    async def generate(
        self,
        model: str,
        template: str,
        variables: Mapping[str, Any] | None = None,
        output_type: type[BaseModel] | None = None,
        *,
        params: Mapping[str, JsonValue] | None = None,
        api_base: str | None = None,
        api_key: str | None = None,
        max_tokens: int | None = None,
    ) -> Generation[Any]:
        """Render ``template`` with ``variables``, call ``model``, return the result.

        With ``output_type`` (a pydantic model) the answer is parsed and validated; an
        invalid answer is sent back with the error, up to ``config.output_attempts``
        answers, then :class:`GenerationError`. Without it the value is the raw text.
        ``params`` add to ``config.params``; ``api_base``/``api_key`` override the config.
        Every request states ``max_tokens``: from ``params``, else ``config.params``, else
        the caller's ``max_tokens``, else ``config.max_tokens``. The caller's is also the
        budget the texts of its ``output_type`` are bounded for in the schema
        (``maxLength``); a smaller one sent cuts those bounds to fit it
        (:func:`~sotopia_are.llm.structured.response_format_within`).
        Every call, failed or not, is appended to :attr:`calls`; raised
        :class:`LLMError`\\ s carry it as ``.call``.
        """
        endpoint = self._endpoint(model, api_base, api_key)
        # The config's fields read from its dict (every call reads them): a pydantic
        # model's attribute is looked up through its class's __getattr__ hook.
        config = self.config.__dict__
        mode: OutputMode | None = None
        if output_type is not None:
            mode = resolve_output_mode(
                config["output_mode"],
                model,
                endpoint.api_base,
                endpoint=endpoint.key,
                memory=self.output_modes,
            )
        # A server without a cap generates until its context is full; never leave it open.
        request_params: dict[str, JsonValue] = {
            "max_tokens": max_tokens or config["max_tokens"],
            **config["params"],
            **(_PARAMS.validate_python(params) if params else {}),
        }
        # The caller's max_tokens is the budget its output type's texts are bounded for; a
        # smaller one (a user's sampling) cuts the bounds of the schema sent.
        sent = request_params["max_tokens"]
        within = (
            (sent, max_tokens) if max_tokens and type(sent) is int and sent < max_tokens else None
        )
        while True:
            try:
                return await self._generate_in_mode(
                    model, template, variables, output_type, mode, endpoint, request_params, within
                )
            except (PermanentLLMError, ReplayMissError) as error:
                weaker = weaker_mode(
                    error,
                    mode,
                    endpoint,
                    configured=self.config.output_mode,
                    memory=self.output_modes,
                )
                if weaker is None:
                    raise
                mode = weaker

    def _endpoint(self, model: str, api_base: str | None, api_key: str | None) -> Endpoint:
        """``config.endpoint(model, api_base=…, api_key=…)``, made on the first call that
        asks for it (in this session or another of its tree): the ``SOTOPIA_ARE_*``
        variables are read then, not on every call (a missing variable's lookup raises and
        catches a KeyError)."""
        key = (model, api_base, api_key)
        found = self._endpoints.get(key)
        if found is not None and found[0] is self.config:
            return found[1]
        endpoint = self.config.endpoint(model, api_base=api_base, api_key=api_key)
        if len(self._endpoints) >= _KEPT_ENDPOINTS:
            self._endpoints.clear()
        self._endpoints[key] = (self.config, endpoint)
        return endpoint

    async def _generate_in_mode(
        self,
        model: str,
        template: str,
        variables: Mapping[str, Any] | None,
        output_type: type[BaseModel] | None,
        mode: OutputMode | None,
        endpoint: Endpoint,
        params: Mapping[str, JsonValue],
        within: tuple[int, int] | None = None,
    ) -> Generation[Any]:
        """One :meth:`generate` call with structured output requested in ``mode``; its
        schema's texts bounded to fit ``within`` (``max_tokens`` sent, the budget they were
        bounded for; None: as the output type bounds them)."""
        started = time.perf_counter()
        messages = self.prompts.render(template, variables)
        request_params = dict(params)
        if output_type is not None:
            assert mode is not None
            response_format = (
                response_format_for(mode, output_type)
                if within is None
                else response_format_within(mode, output_type, *within)
            )
            if response_format is not None:
                request_params["response_format"] = response_format
            if mode != "json_schema":
                messages = self._with_format_instructions(messages, output_type)
        attempts: list[Attempt] = []
        # What every record of this call says (see _record_call).
        call = _Call(
            self, model, endpoint, template, output_type, mode, messages, request_params, started
        )
        conversation = messages
        added: list[Message] = []  # what the next request sends beyond the previous one
        for _ in range(self.config.output_attempts):
            request = _request(model, conversation, request_params, endpoint)
            first = len(attempts)
            try:
                response, source, latency, queued = await self._answer(
                    request, endpoint, attempts, added
                )
            except Exception as exc:
                error = as_llm_error(exc, endpoint, len(attempts))
                failure = error if error is not None else exc
                record = call.record(
                    attempts, error=describe(failure), error_type=type(failure).__name__
                )
                if error is None:
                    raise
                error.call = record
                raise error from (exc if error is not exc else None)
            # The attempt's parts are valid already: the response was validated as such,
            # the rest is ours (see _answered).
            answered = _answered(
                len(attempts) + 1,
                # After transient failures, the first failed attempt carries the addition.
                added if len(attempts) == first else [],
                source,
                latency,
                queued,
                response,
            )
            if output_type is None:
                attempts.append(of_valid_fields(Attempt, answered))
                record = call.record(attempts, raw_text=response.text, parsed=response.text)
                # Generation(value, call), made as every call ends (see of_valid_dataclass).
                return of_valid_dataclass(Generation, {"value": response.text, "call": record})
            try:
                parsed = parse_reply(response.text, output_type)
            except OutputValidationError as invalid:
                answered["error"] = str(invalid)
                answered["error_kind"] = "invalid_output"
                attempts.append(of_valid_fields(Attempt, answered))
                added = [
                    Message(role="assistant", content=_quoted(response.text)),
                    *self.prompts.render(
                        _REPAIR_TEMPLATE,
                        {
                            "error": str(invalid),
                            # Under json_schema every request carries the schema (and
                            # the server decodes under it); its text again would take a
                            # judge's request past a small server's context.
                            "schema": None if mode == "json_schema" else schema_text(output_type),
                        },
                    ),
                ]
                conversation = [*conversation, *added]
                continue
            if parsed.normalizations:
                answered["normalized"] = list(parsed.normalizations)
            attempts.append(of_valid_fields(Attempt, answered))
            value = parsed.value
            # model_dump(mode="json") without its Python layer: the same serializer, called
            # with the same (default) settings.
            dumped = value.__pydantic_serializer__.to_python(value, mode="json")
            record = call.record(attempts, raw_text=response.text, parsed=dumped)
            return of_valid_dataclass(Generation, {"value": value, "call": record})
        assert output_type is not None  # text output returns on its first answer
        last_error = attempts[-1].error
        generation_error = GenerationError(
            f"model {model!r} gave no valid {output_type.__name__} in "
            f"{self.config.output_attempts} answers (template {template!r}); "
            f"last error: {last_error}",
            attempts,
        )
        generation_error.call = call.record(
            attempts,
            raw_text=attempts[-1].raw_text,
            error=str(generation_error),
            error_type="GenerationError",
        )
        raise generation_error

    def _with_format_instructions(
        self, messages: list[Message], output_type: type[BaseModel]
    ) -> list[Message]:
        """Add the schema instructions to the last user message (or as a new one), keeping
        user/assistant alternation that some local servers' chat templates require."""
        instructions = self.prompts.render(_FORMAT_TEMPLATE, {"schema": schema_text(output_type)})
        if messages and messages[-1].role == "user":
            last = messages[-1]
            joined = "\n\n".join([last.content, *(m.content for m in instructions)])
            return [*messages[:-1], Message(role="user", content=joined)]
        return [*messages, *instructions]

    async def _answer(
        self,
        request: LLMRequest,
        endpoint: Endpoint,
        attempts: list[Attempt],
        added: list[Message],
    ) -> tuple[LLMResponse, ResponseSource, float, float]:
        """Answer ``request`` from the replay, the cache, or the network (with retries);
        failed network requests are appended to ``attempts``, the first of them with the
        messages ``added`` since the previous request. Returns the response, its source,
        its latency and how long its request waited for a slot of the endpoint's limit."""
        started = time.perf_counter()
        queued = 0.0
        source: ResponseSource
        if self.replayer is not None:
            response, source = self.replayer.answer(request, self.scope), "replay"
        elif self.cache is not None and (hit := self.cache.get(request)) is not None:
            response, source = hit, "cache"
        else:
            response, started, queued = await send_with_retries(
                request, endpoint, self.config, self.concurrency, attempts, added
            )
            source = "network"
            if self.cache is not None:
                self.cache.put(request, response)
        if self.recorder is not None:
            self.recorder.record(request, response, self.scope)
        return response, source, time.perf_counter() - started, queued


REPAIR_QUOTE_CHARS = 1000
"""The most of a rejected answer that the request asking again quotes back (about 300
tokens): enough to show the model what it wrote (the error names what was wrong and
where), while an answer that ran to its ``max_tokens`` quoted whole would take the
request past a small server's context (a 0.5B judge's 2,440-token runaway answer on a
4,096-token llama.cpp slot: HTTP 400). The call's attempts keep the whole answer
(``raw_text``) and the quote as sent (``added_messages``)."""


def _quoted(text: str) -> str:
    """``text`` as the request asking again quotes it: at most :data:`REPAIR_QUOTE_CHARS`
    of it, and a line saying how much was left out."""
    if len(text) <= REPAIR_QUOTE_CHARS:
        return text
    left_out = len(text) - REPAIR_QUOTE_CHARS
    return f"{text[:REPAIR_QUOTE_CHARS]}\n[... {left_out} more characters of this answer]"


def _answered(
    number: int,
    added_messages: list[Message],
    source: ResponseSource,
    latency_s: float,
    queued_s: float,
    response: LLMResponse,
) -> dict[str, Any]:
    """Every field of the :class:`Attempt` that got ``response``, in the model's order:
    without an error and with nothing normalised (the caller sets those)."""
    # Read from the response's dict: a pydantic model's attribute is looked up through
    # its class's __getattr__ hook, several times the cost (every call comes here).
    answer = response.__dict__
    return {
        "number": number,
        "added_messages": added_messages,
        "source": source,
        "latency_s": latency_s,
        "queued_s": queued_s,
        "service_s": answer["service_s"],
        "raw_text": answer["text"],
        "prompt_tokens": answer["prompt_tokens"],
        "completion_tokens": answer["completion_tokens"],
        "cost_usd": answer["cost_usd"] if source == "network" else 0.0,
        "error": None,
        "error_kind": None,
        "normalized": [],
    }


class _Call:
    """What every record of one :meth:`LLMSession.generate` call in one output mode says,
    and how it is recorded."""

    __slots__ = (
        "endpoint",
        "messages",
        "mode",
        "model",
        "output_type",
        "params",
        "session",
        "started",
        "template",
    )

    def __init__(
        self,
        session: LLMSession,
        model: str,
        endpoint: Endpoint,
        template: str,
        output_type: type[BaseModel] | None,
        mode: OutputMode | None,
        messages: list[Message],
        params: dict[str, JsonValue],
        started: float,
    ) -> None:
        self.session, self.model, self.endpoint, self.template = session, model, endpoint, template
        self.output_type, self.mode, self.messages, self.params = (
            output_type,
            mode,
            messages,
            params,
        )
        self.started = started

    def record(
        self,
        attempts: list[Attempt],
        *,
        raw_text: str | None = None,
        parsed: JsonValue = None,
        error: str | None = None,
        error_type: str | None = None,
    ) -> LLMCall:
        """The call's record, with its outcome; reported to its session and up the chain."""
        # Every part is valid already: the messages were rendered as Messages, the
        # attempts built from validated answers, and the parameters are those of the
        # requests (see _request), which no transport changes.
        output_type = self.output_type
        call = LLMCall.of_valid_parts(
            attempts,
            model=self.model,
            api_base=self.endpoint.api_base,
            scope=self.session.scope,
            template=self.template,
            output_type=output_type.__name__ if output_type is not None else None,
            output_mode=self.mode,
            messages=self.messages,
            params=self.params,
            latency_s=time.perf_counter() - self.started,
            raw_text=raw_text,
            parsed=parsed,
            error=error,
            error_type=error_type,
        )
        session: LLMSession | None = self.session
        while session is not None:  # this session, then each parent up the chain
            session._count += 1
            if session.retain_calls:
                session._calls.append(call)
            else:
                session._tally.add_call(call)
            session = session._parent
        return call


_KEPT_ENDPOINTS = 64
"""Endpoints a session tree keeps (see :meth:`LLMSession._endpoint`): a run calls a few."""

_PARAMS: TypeAdapter[dict[str, JsonValue]] = TypeAdapter(dict[str, JsonValue])
"""A caller's request parameters, checked (and copied) as a request checks its own."""


def _request(
    model: str, messages: list[Message], params: dict[str, JsonValue], endpoint: Endpoint
) -> LLMRequest:
    """The request of ``messages`` with ``params``, whose parts are valid already (the
    caller's parameters were checked by :meth:`LLMSession.generate`, the config's by the
    config, the messages rendered as such, the response format is ours).

    Over the HTTP transport it is not validated again: validating copies every parameter
    (a whole JSON schema) for every request, and that transport only reads them. litellm
    may change a schema it is given (it drops what some providers refuse), so its
    requests get copies of their own, by validation, and a call's record keeps what was
    asked for."""
    if endpoint.transport == "http":
        return of_valid_fields(
            LLMRequest, {"model": model, "messages": tuple(messages), "params": params}
        )
    return LLMRequest(model=model, messages=tuple(messages), params=params)


def _join(parent: str | None, scope: str) -> str:
    return scope if parent is None else f"{parent}/{scope}"


@overload
async def generate(
    model: str,
    template: str,
    variables: Mapping[str, Any] | None = None,
    output_type: None = None,
    *,
    session: LLMSession | None = None,
) -> Generation[str]: ...


@overload
async def generate(
    model: str,
    template: str,
    variables: Mapping[str, Any] | None,
    output_type: type[M],
    *,
    session: LLMSession | None = None,
) -> Generation[M]: ...


@overload
async def generate(
    model: str,
    template: str,
    variables: Mapping[str, Any] | None = None,
    *,
    output_type: type[M],
    session: LLMSession | None = None,
) -> Generation[M]: ...


async def generate(
    model: str,
    template: str,
    variables: Mapping[str, Any] | None = None,
    output_type: type[BaseModel] | None = None,
    *,
    session: LLMSession | None = None,
) -> Generation[Any]:
    """:meth:`LLMSession.generate` on ``session`` (a default session if None)."""
    return await (session or LLMSession()).generate(model, template, variables, output_type)
