"""Storage: profiles and episodes in Redis (a server, or an embedded one with no set-up).

``connect()`` gives an :class:`EpisodeStore`; records are redis-om ``HashModel``s that
work on plain Redis ≥ 6.2 with no modules. See the README's "Storage" section.
"""

from sotopia_are.record import STATUS_KEY
from sotopia_are.storage.are_export import export_episode_json
from sotopia_are.storage.connection import REDIS_URL_ENV, connect, redact_url
from sotopia_are.storage.embedded import DATA_DIR_ENV, EmbeddedRedis, default_data_dir
from sotopia_are.storage.episode_layout import usage_summary
from sotopia_are.storage.episode_log import EpisodeLog, EpisodeStatus, stable_episode_id
from sotopia_are.storage.episode_sink import EpisodeRecorder
from sotopia_are.storage.errors import (
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
from sotopia_are.storage.jsonl import (
    export_episodes,
    export_records,
    import_episodes,
    import_records,
    read_records,
    write_records,
)
from sotopia_are.storage.profiles import (
    AgentProfile,
    EnvironmentProfile,
    RelationshipProfile,
    RelationshipType,
)
from sotopia_are.storage.store import EpisodeFilter, EpisodeStore, OnUnreadable
from sotopia_are.storage.stored_model import StoredModel

__all__ = [
    "DATA_DIR_ENV",
    "REDIS_URL_ENV",
    "STATUS_KEY",
    "AgentProfile",
    "EmbeddedRedis",
    "EmptySelectionError",
    "EnvironmentProfile",
    "EpisodeExistsError",
    "EpisodeFilter",
    "EpisodeLog",
    "EpisodeRecorder",
    "EpisodeStateError",
    "EpisodeStatus",
    "EpisodeStore",
    "JsonlFormatError",
    "OnUnreadable",
    "RecordNotFoundError",
    "RelationshipProfile",
    "RelationshipType",
    "StorageConflictError",
    "StorageError",
    "StorageRefusedError",
    "StorageUnavailableError",
    "StoredModel",
    "UnreadableRecordError",
    "connect",
    "default_data_dir",
    "export_episode_json",
    "export_episodes",
    "export_records",
    "import_episodes",
    "import_records",
    "read_records",
    "redact_url",
    "stable_episode_id",
    "usage_summary",
    "write_records",
]
