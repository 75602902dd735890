"""Record and replay: what makes an episode's model answers reproducible.

A :class:`Recorder` writes every request answered during a run, with its answer, to a
JSONL file as it happens. A :class:`Replayer` answers from such a file instead of the
network: identical requests get their recorded answers in recorded order, and a request
the file does not hold is a :class:`~sotopia_are.llm.errors.ReplayMissError`.
"""

from __future__ import annotations

import collections
import threading
from pathlib import Path
from types import TracebackType

from pydantic import BaseModel, ConfigDict

from sotopia_are.llm.errors import ReplayMissError
from sotopia_are.llm.request import LLMRequest, LLMResponse

__all__ = ["RecordedExchange", "Recorder", "Replayer"]


class RecordedExchange(BaseModel):
    """One line of a recording: a request, its answer, and the scope that made it."""

    model_config = ConfigDict(extra="forbid")

    key: str
    scope: str | None = None
    request: LLMRequest
    response: LLMResponse


class Recorder:
    """Appends exchanges to a JSONL file (created or truncated when the recorder opens)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.count = 0
        self._lock = threading.Lock()
        self._file = self.path.open("w", encoding="utf-8")

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
    """Answers requests from a recording; never reaches the network."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._answers: dict[str, collections.deque[LLMResponse]] = {}
        self._lock = threading.Lock()
        for line in self.path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                exchange = RecordedExchange.model_validate_json(line)
                self._answers.setdefault(exchange.key, collections.deque()).append(
                    exchange.response
                )

    @property
    def remaining(self) -> int:
        """Recorded answers not used yet."""
        return sum(len(q) for q in self._answers.values())

    def answer(self, request: LLMRequest) -> LLMResponse:
        """The next recorded answer to ``request``."""
        key = request.key()
        with self._lock:
            queue = self._answers.get(key)
            if queue:
                return queue.popleft()
        last = request.messages[-1].content if request.messages else ""
        preview = " ".join(last.split())[:200]
        why = "all its recorded answers were used" if queue is not None else "it was not recorded"
        raise ReplayMissError(
            f"replay of {self.path}: no answer for a request to model {request.model!r} "
            f"({why}); request key {key[:16]}…, last message: {preview!r}"
        )
