"""Record and replay: what makes an episode's model answers reproducible.

A :class:`Recorder` writes every request answered during a run, with its answer and the
scope of the session that sent it, to a JSONL file as it happens. A :class:`Replayer`
answers from such a file instead of the network. Answers are keyed on the scope *and*
the request: concurrent episodes that send identical prompts are answered in network
completion order, so only the scope (e.g. the episode id, see
:meth:`~sotopia_are.llm.LLMSession.scoped`) says which answer was whose. Within one
scope, identical requests get their recorded answers in recorded order. A request the
file does not hold for its scope is a :class:`~sotopia_are.llm.errors.ReplayMissError`.
"""

from __future__ import annotations

import collections
import threading
from pathlib import Path
from types import TracebackType

from pydantic import BaseModel, ConfigDict

from sotopia_are.llm.errors import ReplayMissError
from sotopia_are.llm.request import LLMRequest, LLMResponse

__all__ = ["RECORDING_VERSION", "RecordedExchange", "Recorder", "Replayer"]


RECORDING_VERSION = 1
"""The version of a recording's lines this code writes (lines without one are read as
version 1: recordings made before lines carried it)."""


class RecordedExchange(BaseModel):
    """One line of a recording: a request, its answer, and the scope that made it."""

    model_config = ConfigDict(extra="forbid")

    version: int = RECORDING_VERSION
    key: str
    scope: str | None = None
    request: LLMRequest
    response: LLMResponse


class Recorder:
    """Appends exchanges to a JSONL file.

    A new recorder refuses a file that exists (FileExistsError), so a finished recording
    is never wiped by accident; ``append=True`` adds to it instead, e.g. to resume a batch
    whose recording was cut short (a replay of the file then holds both runs).
    """

    def __init__(self, path: Path | str, *, append: bool = False) -> None:
        self.path = Path(path)
        self.count = 0
        self._lock = threading.Lock()
        try:
            self._file = self.path.open("a" if append else "x", encoding="utf-8")
        except FileExistsError:
            raise FileExistsError(
                f"recording {self.path} already exists; pass append=True to add to it "
                "(Recorder(path, append=True), LLMSession.recording(path, append=True)), "
                "or delete it to record afresh"
            ) from None
        if append and self._file.tell() > 0 and not _ends_with_newline(self.path):
            # A run that crashed mid-write left half a line; start ours on a new one.
            self._file.write("\n")

    def record(self, request: LLMRequest, response: LLMResponse, scope: str | None) -> None:
        """Write one exchange and flush it, so a crash loses nothing already answered."""
        line = RecordedExchange(
            key=request.key(), scope=scope, request=request, response=response
        ).model_dump_json()
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()
            self.count += 1

    def close(self) -> None:
        """Close the file."""
        self._file.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Replayer:
    """Answers requests from a recording, per scope; never reaches the network."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._answers: dict[tuple[str | None, str], collections.deque[LLMResponse]] = {}
        self._lock = threading.Lock()
        for line in self.path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                exchange = RecordedExchange.model_validate_json(line)
                if exchange.version > RECORDING_VERSION:
                    raise ValueError(
                        f"recording {self.path} has version {exchange.version} lines, written "
                        f"by a newer sotopia_are; this one reads up to version "
                        f"{RECORDING_VERSION}. Upgrade sotopia_are (pip install -U sotopia-are)."
                    )
                self._answers.setdefault(
                    (exchange.scope, exchange.key), collections.deque()
                ).append(exchange.response)

    @property
    def remaining(self) -> int:
        """Recorded answers not used yet."""
        return sum(len(q) for q in self._answers.values())

    def answer(self, request: LLMRequest, scope: str | None = None) -> LLMResponse:
        """The next answer recorded for ``request`` sent from a session scoped ``scope``."""
        key = request.key()
        with self._lock:
            queue = self._answers.get((scope, key))
            if queue:
                return queue.popleft()
        last = request.messages[-1].content if request.messages else ""
        preview = " ".join(last.split())[:200]
        if queue is not None:
            why = "all its recorded answers were used"
        else:
            elsewhere = sorted(repr(s) for s, k in self._answers if k == key)
            why = (
                f"it was recorded under scope {', '.join(elsewhere)}; replay with the scopes "
                "of the recording run"
                if elsewhere
                else "it was not recorded"
            )
        raise ReplayMissError(
            f"replay of {self.path}: no answer for a request to model {request.model!r} in "
            f"scope {scope!r} ({why}); request key {key[:16]}…, last message: {preview!r}"
        )


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(-1, 2)
        return f.read(1) == b"\n"
