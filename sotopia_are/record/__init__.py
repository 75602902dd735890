"""The one episode record: what storage, exports, rating, the command line and reports
read and write (see :class:`EpisodeRecord`), and rating it (:func:`give_verdict`)."""

from .checks import RecordCheckError, checked_import, record_problems
from .episode_record import (
    RECORD_VERSION,
    STATUS_KEY,
    VERDICTS_KEY,
    EpisodeRecord,
    NotRatableError,
    RecordFormatError,
    RecordVersionError,
    VerdictExistsError,
    agent_calls,
    judge_calls_of,
    load_record,
    migrate_v0,
    record_from_are_json,
    record_of_result,
)
from .judges import Judge, RecordJudge, judge_key
from .rating import check_ratable, give_verdict
from .scores import OVERALL, Scores
from .summary import EpisodeSummary
from .verdict import Verdict

__all__ = [
    "OVERALL",
    "RECORD_VERSION",
    "STATUS_KEY",
    "VERDICTS_KEY",
    "EpisodeRecord",
    "EpisodeSummary",
    "Judge",
    "NotRatableError",
    "RecordCheckError",
    "RecordFormatError",
    "RecordJudge",
    "RecordVersionError",
    "Scores",
    "Verdict",
    "VerdictExistsError",
    "agent_calls",
    "check_ratable",
    "checked_import",
    "give_verdict",
    "judge_calls_of",
    "judge_key",
    "load_record",
    "migrate_v0",
    "record_from_are_json",
    "record_of_result",
    "record_problems",
]
