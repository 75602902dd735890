"""Every error sotopia_are raises, in one tree under :class:`~sotopia_are.SotopiaAreError`.

``except sa.SotopiaAreError`` catches any of them; the command line reports exactly these
as one ``error: …`` line (exit 1; 2 for a :class:`ConfigurationError`) and treats
anything else as a bug. Each error also keeps the built-in base it is known by, so
``except ValueError`` or ``except KeyError`` still work where they did. The classes are
defined in the layer that raises them (a lower layer cannot import this module) and all
but those of the front ends above studies (:class:`~sotopia_are.cluster.ClusterError`,
:class:`~sotopia_are.training.TrainingDataError`, hosting's and the training env's) are
importable from here:

```text
SotopiaAreError                       sotopia_are (the face: sa.SotopiaAreError)
├── LLMError                          llm: a model call, its prompt or its replay
│   ├── TemplateError                   a prompt template missing or malformed
│   ├── PermanentLLMError               retrying cannot fix it (key, model, request)
│   │   ├── ConfigurationError            a model unusable as configured (preflight)
│   │   └── RequestRejectedError          the server refused this one request
│   ├── TransientLLMError               rate limits, timeouts, 5xx outlasted the retries
│   │   └── MalformedReplyError           a 200 that is not a chat completion
│   ├── GenerationError                 no output validated after every attempt
│   └── ReplayMissError                 a request the recording does not hold
├── HTTPTransportError                llm: the HTTP transport's request failed (each
│   ├── APIConnectionError              becomes an LLMError before it leaves llm)
│   ├── Timeout
│   ├── InvalidURLError
│   ├── BadRequestError
│   │   └── UnprocessableEntityError
│   ├── AuthenticationError
│   ├── PermissionDeniedError
│   ├── NotFoundError
│   ├── RateLimitError
│   └── InternalServerError
│       ├── BadGatewayError
│       └── ServiceUnavailableError
├── OutputValidationError (ValueError)   llm: a reply that does not fit its schema
├── WireProtocolError (ConnectionError) llm: a server's bytes that are no HTTP answer
├── ScriptParseError (ValueError)        messages: a script line that does not read
├── CueError (ValueError)                messages: a screenplay cue that does not read
├── UnknownAppClassError (LookupError)   simulation: no App class by that name
├── ScenarioFormatError (ValueError)     simulation: an ARE scenario file that won't import
├── ScenarioExportError (ValueError)     simulation: a scenario that won't export as JSON
├── AppSourceError (ValueError)          simulation: App classes that cannot be loaded
├── UnsafeIdError (ValueError)           social: an episode id, tag or pk not allowed
├── HumanInputError (RuntimeError)       agents: no answer from the person at the keyboard
├── ScriptExhaustedError (RuntimeError)  agents: a scripted agent out of lines
├── ScriptMismatchError (ValueError)     agents: a script not for this episode
├── RubricError (ValueError)             evaluation: a rubric that cannot be used
├── RecordFormatError (ValueError)       record: data that is not an episode record
├── RecordVersionError (ValueError)      record: a record of a newer sotopia_are
├── RecordCheckError (ValueError)        record: imported data that fails its checks
├── NotRatableError (ValueError)         record: an episode that did not complete, rated
├── VerdictExistsError (ValueError)      record: the judge already rated the episode
├── StorageError                         storage: the store
│   ├── StorageUnavailableError            Redis unreachable or not starting
│   ├── StorageRefusedError                Redis refuses writes (memory, read-only, disk)
│   ├── RecordNotFoundError (KeyError)     no record with that key
│   ├── EpisodeStateError                  an operation the episode's status forbids
│   │   └── EpisodeExistsError               the episode id is stored already
│   ├── StorageConflictError               a write kept losing to other writers
│   ├── JsonlFormatError (ValueError)      a JSONL line that is no valid record
│   └── UnreadableRecordError              a key that holds no record of ours
├── EmptySelectionError (ValueError)     storage: a listing or export that holds nothing
├── StudyInputError (ValueError)         studies: what a verb was given cannot be used
├── AgreementError (ValueError)          studies: human ratings that cannot be compared
├── ScenarioLoadError (ValueError)       studies: a scenario file or app source
├── BatchError (RuntimeError)            studies: a batch that cannot start or go on
│   └── ClusterError                       cluster: a batch that cannot run on the cluster
├── SubmissionError (ValueError)        hosting: what a participant sent cannot be taken now
├── StudyMismatchError (ValueError)     hosting: the tag holds a hosted study of another spec
├── ResumeError                         hosting: a session whose log does not replay
├── ExposedHostWarning (UserWarning)    hosting: a study served beyond this machine
├── IllegalMoveError (ValueError)       training: a move the game's rules do not allow now
└── TrainingDataError (ValueError)       training: episodes that cannot make the file asked for
```

A pydantic ``ValidationError`` (a ``ValueError``) is what the library's value types
(:class:`~sotopia_are.EpisodeSpec`, :class:`~sotopia_are.LLMConfig`, the profiles…) raise
for a value they refuse, as every pydantic model does; the command line reports it as an
error of its input too.
"""

from __future__ import annotations

from sotopia_are import SotopiaAreError
from sotopia_are.agents import HumanInputError, ScriptExhaustedError, ScriptMismatchError
from sotopia_are.evaluation import RubricError
from sotopia_are.llm import (
    ConfigurationError,
    GenerationError,
    LLMError,
    MalformedReplyError,
    PermanentLLMError,
    ReplayMissError,
    RequestRejectedError,
    TemplateError,
    TransientLLMError,
)
from sotopia_are.llm.http_transport import (
    APIConnectionError,
    AuthenticationError,
    BadGatewayError,
    BadRequestError,
    HTTPTransportError,
    InternalServerError,
    InvalidURLError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
    Timeout,
    UnprocessableEntityError,
)
from sotopia_are.llm.http_wire import WireProtocolError
from sotopia_are.llm.structured import OutputValidationError
from sotopia_are.messages import ScriptParseError
from sotopia_are.messages.screenplay import CueError
from sotopia_are.record import (
    NotRatableError,
    RecordCheckError,
    RecordFormatError,
    RecordVersionError,
    VerdictExistsError,
)
from sotopia_are.simulation.apps.registry import UnknownAppClassError
from sotopia_are.simulation.data_handler.errors import ScenarioExportError, ScenarioFormatError
from sotopia_are.simulation.data_handler.loading import AppSourceError
from sotopia_are.social.spec import UnsafeIdError
from sotopia_are.storage import (
    EmptySelectionError,
    EpisodeExistsError,
    EpisodeStateError,
    JsonlFormatError,
    RecordNotFoundError,
    StorageConflictError,
    StorageError,
    StorageRefusedError,
    StorageUnavailableError,
    UnreadableRecordError,
)

__all__ = [
    "APIConnectionError",
    "AgreementError",
    "AppSourceError",
    "AuthenticationError",
    "BadGatewayError",
    "BadRequestError",
    "BatchError",
    "ConfigurationError",
    "CueError",
    "EmptySelectionError",
    "EpisodeExistsError",
    "EpisodeStateError",
    "GenerationError",
    "HTTPTransportError",
    "HumanInputError",
    "InternalServerError",
    "InvalidURLError",
    "JsonlFormatError",
    "LLMError",
    "MalformedReplyError",
    "NotFoundError",
    "NotRatableError",
    "OutputValidationError",
    "PermanentLLMError",
    "PermissionDeniedError",
    "RateLimitError",
    "RecordCheckError",
    "RecordFormatError",
    "RecordNotFoundError",
    "RecordVersionError",
    "ReplayMissError",
    "RequestRejectedError",
    "RubricError",
    "ScenarioExportError",
    "ScenarioFormatError",
    "ScenarioLoadError",
    "ScriptExhaustedError",
    "ScriptMismatchError",
    "ScriptParseError",
    "ServiceUnavailableError",
    "SotopiaAreError",
    "StorageConflictError",
    "StorageError",
    "StorageRefusedError",
    "StorageUnavailableError",
    "StudyInputError",
    "TemplateError",
    "Timeout",
    "TransientLLMError",
    "UnknownAppClassError",
    "UnprocessableEntityError",
    "UnreadableRecordError",
    "UnsafeIdError",
    "VerdictExistsError",
    "WireProtocolError",
]


class StudyInputError(SotopiaAreError, ValueError):
    """What a verb was given cannot be used: a spec, task or import file that does not
    read, a plan whose parts do not fit (a model for every agent, one id per spec), an
    episode that is not complete, arguments that contradict each other. The message names
    the file (and line) or the argument, and the fix."""


class AgreementError(SotopiaAreError, ValueError):
    """A labelled set that cannot be read, or nothing to compare; the message says why."""


class ScenarioLoadError(SotopiaAreError, ValueError):
    """A scenario file that cannot be read or imported, or an app source that cannot be
    loaded; nothing was imported. The message says where, what, and how to proceed."""


class BatchError(SotopiaAreError, RuntimeError):
    """A batch that cannot start, or a worker that stopped; the message says what to do."""
