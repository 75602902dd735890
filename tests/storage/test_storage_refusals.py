"""A Redis that is reachable but refuses writes — at its memory limit (``maxmemory``,
``noeviction``), a read-only replica, unable to save to disk (``MISCONF``) — is a
:class:`StorageRefusedError` naming the server, the cause and the fix, from every kind of
write; a batch whose verdict writes are refused stops on it and never reports the
episode as "the judge failed"."""

import json
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import redis
from redis_servers import RedisServerProcess, free_port

import sotopia_are as sa
from sotopia_are.llm import RetryPolicy
from sotopia_are.social import EpisodeSpec
from sotopia_are.storage import (
    AgentProfile,
    EpisodeLog,
    EpisodeStore,
    StorageRefusedError,
    connect,
)
from sotopia_are.studies import BatchError
from sotopia_are.testing import LocalLLMServer, ReplyLike

MODEL = "openai/test-model"
NAMES = ["Mara Quinn", "Teo Alvarez"]


@pytest.fixture
def server(redis_server: Callable[..., RedisServerProcess]) -> RedisServerProcess:
    return redis_server()


@pytest.fixture
def store(server: RedisServerProcess) -> Iterator[EpisodeStore]:
    with connect(server.url) as opened:
        yield opened


def admin(server: RedisServerProcess) -> "redis.Redis[str]":
    return redis.Redis.from_url(server.url, decode_responses=True)


def out_of_memory(server: RedisServerProcess) -> None:
    client = admin(server)
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", "1")


def read_only(server: RedisServerProcess) -> None:
    # A replica of a primary that is not there: it serves reads and refuses writes.
    admin(server).execute_command("REPLICAOF", "127.0.0.1", str(free_port()))


def disk_failing(server: RedisServerProcess, _tmp_path: Path) -> None:
    """A failed background save (its data directory gone) makes Redis refuse writes."""
    client = admin(server)
    client.config_set("save", "3600 1")  # only a server that saves refuses writes then
    shutil.rmtree(server.directory)
    client.config_set("stop-writes-on-bgsave-error", "yes")
    client.bgsave()
    deadline = time.monotonic() + 30
    while client.info("persistence")["rdb_last_bgsave_status"] != "err":
        assert time.monotonic() < deadline, "the background save did not fail"
        time.sleep(0.05)


REFUSALS: dict[str, tuple[Callable[[RedisServerProcess, Path], None], str]] = {
    "memory": (lambda server, _tmp: out_of_memory(server), "memory limit (maxmemory)"),
    "read-only": (lambda server, _tmp: read_only(server), "read-only replica"),
    "disk": (disk_failing, "cannot save to disk"),
}


def episode(episode_id: str = "e1") -> EpisodeLog:
    return EpisodeLog(pk=episode_id, tag="refusals", agents=NAMES)


@pytest.mark.parametrize("cause", list(REFUSALS))
def test_every_kind_of_write_refused_is_a_storage_refusal(
    cause: str, server: RedisServerProcess, store: EpisodeStore, tmp_path: Path
) -> None:
    store.start_episode(episode("running"))
    refuse, named = REFUSALS[cause]
    try:
        refuse(server, tmp_path)
        writes: dict[str, Callable[[], object]] = {
            "start": lambda: store.start_episode(episode("e2")),
            "append": lambda: store.append_call("running", {"model": MODEL}),
            "save": lambda: store.save(AgentProfile(first_name="Mara", last_name="Quinn")),
        }
        for name, write in writes.items():
            with pytest.raises(StorageRefusedError) as refused:
                write()
            assert refused.value.cause == cause, name
            message = str(refused.value)
            assert f"Redis at {server.url} refuses writes" in message and named in message
            assert "Fix:" in message
        reads = store.get_episode("running").status  # reads still work
        assert reads is sa.EpisodeStatus.RUNNING
    finally:
        admin(server).config_set("save", "")  # else a failing server refuses to shut down


def spec(name: str) -> EpisodeSpec:
    return sa.EpisodeSpec(
        episode_id=name,
        scenario=f"A bakery before closing [{name}].",
        agent_names=NAMES,
        agent_backgrounds=["the baker", "a café owner"],
        agent_goals=["sell the bread", "buy it cheap"],
        max_turns=2,
    )


def test_a_verdict_refused_is_not_blamed_on_the_judge(
    server: RedisServerProcess, store: EpisodeStore, llm_server: LocalLLMServer
) -> None:
    """The judge answers well; the server fills up as it does (its rule sets maxmemory)."""

    def rule(body: Mapping[str, Any]) -> ReplyLike:
        if "impartial expert judge" not in body["messages"][0]["content"]:
            return json.dumps({"action_type": "leave", "argument": ""})
        out_of_memory(server)
        return json.dumps(
            {n: {d.name: {"reasoning": "ok", "score": d.low} for d in sa.SOTOPIA_EVAL.dimensions}
             for n in NAMES}
        )  # fmt: skip

    llm_server.rule = rule
    fast = RetryPolicy(max_attempts=2, initial_backoff_s=0.01, max_backoff_s=0.02)
    config = sa.LLMConfig(api_base=llm_server.url, timeout_s=5.0, retry=fast)
    with pytest.raises(BatchError) as stopped:
        sa.batch(
            [spec("e0")], MODEL, tag="oom", store=store, judge_model=MODEL, config=config,
            workers=1,
        )  # fmt: skip
    message = str(stopped.value)
    assert "StorageRefusedError" in message and "maxmemory" in message
    assert "judge" not in message
    admin(server).config_set("maxmemory", "0")
    (stored,) = store.list_episodes(tag="oom")
    assert not store.load(stored.pk).verdicts  # no verdict, and no judge failure recorded
