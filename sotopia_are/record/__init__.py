"""The one episode record: what storage, exports, rating, the command line and reports
read and write (see :class:`EpisodeRecord`)."""

from .episode_record import (
    RECORD_VERSION,
    STATUS_KEY,
    VERDICTS_KEY,
    EpisodeRecord,
    RecordVersionError,
    agent_calls,
    judge_calls_of,
    load_record,
    migrate_v0,
    record_from_are_json,
    record_of_result,
)
from .summary import EpisodeSummary
from .verdict import Verdict

__all__ = [
    "RECORD_VERSION",
    "STATUS_KEY",
    "VERDICTS_KEY",
    "EpisodeRecord",
    "EpisodeSummary",
    "RecordVersionError",
    "Verdict",
    "agent_calls",
    "judge_calls_of",
    "load_record",
    "migrate_v0",
    "record_from_are_json",
    "record_of_result",
]
