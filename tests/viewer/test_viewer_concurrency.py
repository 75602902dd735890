"""The viewer answers hundreds of concurrent requests: 200 GETs at once (the list, every
episode, a batch) are all answered, each with its page. The standard library's server it
ran on before (a listen backlog of 5) left 73 of 200 unanswered in a minute."""

import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from viewer_support import TAG, Seeded

from sotopia_are.viewer import ViewerServer

CONCURRENT = 200


def fetch(url: str, start: threading.Barrier) -> tuple[int, str]:
    start.wait()  # every request is sent at once
    try:
        with urllib.request.urlopen(url, timeout=60) as reply:
            return reply.status, reply.read().decode()
    except OSError as error:
        return 0, f"{type(error).__name__}: {error}"


def test_two_hundred_concurrent_gets_are_all_answered(seeded: Seeded) -> None:
    with seeded.store() as store, ViewerServer(store, port=0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            pages = [server.url, *(f"{server.url}episode/{e}" for e in seeded.played)]
            pages.append(f"{server.url}tag/{TAG}")
            urls = [pages[n % len(pages)] for n in range(CONCURRENT)]
            start = threading.Barrier(CONCURRENT)
            with ThreadPoolExecutor(CONCURRENT) as pool:
                replies = list(pool.map(lambda url: fetch(url, start), urls))
        finally:
            server.shutdown()
            thread.join()
    failures = [body for status, body in replies if status != 200]
    assert not failures, f"{len(failures)} of {CONCURRENT} unanswered, e.g. {failures[0]}"
    assert all(body.rstrip().endswith("</html>") for _status, body in replies)
