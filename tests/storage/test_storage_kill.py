"""Kill the Redis server mid-batch: nothing completed is lost, and the batch resumes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from redis_servers import RedisServerProcess
from storage_episodes_support import flat_agents, flat_spec

from sotopia_are.simulation.data_handler.exporter import convert_completed_event
from sotopia_are.simulation.types import CompletedEvent
from sotopia_are.social import EpisodeResult, EpisodeSpec, run_episodes
from sotopia_are.storage import (
    EpisodeRecorder,
    EpisodeStatus,
    EpisodeStore,
    StorageUnavailableError,
    connect,
    stable_episode_id,
)

TAG = "kill-batch"


class KillAfter:
    """A sink after the recorder: kills the server once episode ``victim`` has logged
    ``events`` events and they are stored, and remembers which episodes ended."""

    def __init__(
        self, server: RedisServerProcess, store: EpisodeStore, victim: str, events: int
    ) -> None:
        self.server, self.store, self.victim, self.events = server, store, victim, events
        self.seen = 0
        self.ended: dict[str, EpisodeResult] = {}

    def on_event(self, episode_id: str, event: CompletedEvent) -> None:
        if episode_id == self.victim:
            self.seen += 1
            if self.seen == self.events:
                self.store.flush()  # the recorder queues its appends for the loop's turn
                self.server.kill()

    def on_episode_end(self, episode_id: str, result: EpisodeResult) -> None:
        self.ended[episode_id] = result


def plan() -> list[EpisodeSpec]:
    return [flat_spec(stable_episode_id(TAG, "fridge", str(n)), seed=n) for n in range(5)]


async def test_storage_kill_mid_batch_then_resume(
    redis_server: Callable[..., RedisServerProcess],
) -> None:
    server = redis_server(persistent=True)
    specs = plan()
    store = connect(server.url)
    killer = KillAfter(server, store, victim=specs[2].episode_id, events=3)
    recorder = EpisodeRecorder(store, tag=TAG)
    with pytest.raises(ExceptionGroup) as caught:
        await run_episodes(specs, flat_agents, max_concurrent=1, sinks=[recorder, killer])
    assert caught.group_contains(StorageUnavailableError)
    store.client.close()
    completed_before = dict(killer.ended)
    assert list(completed_before) == [s.episode_id for s in specs[:2]]

    server.start()  # same port, same append-only file
    with connect(server.url) as store:
        # Nothing completed is lost: records, scores of the run, and every event.
        for episode_id, result in completed_before.items():
            stored = store.get_episode(episode_id)
            assert stored.status is EpisodeStatus.COMPLETE
            assert store.read_events(episode_id) == [
                convert_completed_event(e) for e in result.events
            ]
        # The episode the kill interrupted is readable, with the events it had.
        victim = specs[2].episode_id
        assert store.episode_ids(tag=TAG, status="running") == [victim]
        assert len(store.read_events(victim)) == 3 == store.get_episode(victim).event_count
        started_at = {pk: store.get_episode(pk).started_at for pk in completed_before}

        # Resume: mark the leftovers incomplete, skip what is complete, run the rest.
        assert store.mark_interrupted(tag=TAG) == [victim]
        done = store.completed_episode_ids(TAG)
        assert done == set(completed_before)
        remaining = [spec for spec in specs if spec.episode_id not in done]
        recorder = EpisodeRecorder(store, tag=TAG)
        results = await run_episodes(remaining, flat_agents, sinks=[recorder])
        assert [r.status for r in results] == ["complete"] * 3

        assert store.completed_episode_ids(TAG) == {spec.episode_id for spec in specs}
        for pk, when in started_at.items():
            assert store.get_episode(pk).started_at == when  # skipped, not rerun
            assert store.get_episode(pk).attempt == 1
        rerun = store.get_episode(victim)
        assert rerun.attempt == 2 and rerun.event_count == len(results[0].events)
