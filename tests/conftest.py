import functools
import os
import tempfile

import numpy as np
import pytest

# A live class's embedded store writes under MHA_DATA_DIR: tests keep it out of the home directory.
os.environ.setdefault("MHA_DATA_DIR", tempfile.mkdtemp(prefix="mha-tests-"))

# --- marks held to what a test starts -------------------------------------------------------------
# `make test-fast` runs ``-m "not browser and not server and not slow"``. A test that launches Chromium
# must be marked ``browser``, one that starts a real Streamlit server ``server`` (or ``browser``):
# every launch and server start is noted, and a test that made one without its mark fails at its
# teardown, whoever wrote it (a module-scoped fixture's start counts for the first test using it).
STARTED: set[str] = set()
NEEDS = {"browser": ("browser",), "server": ("server", "browser")}  # started -> any of these marks


def _noting(kind: str, start):
    @functools.wraps(start)
    def noted(*args, **kwargs):
        STARTED.add(kind)
        return start(*args, **kwargs)

    return noted


def pytest_configure(config):
    import tests.live_server as live_server

    live_server._wait_healthy = _noting("server", live_server._wait_healthy)  # every server start waits here
    try:
        from playwright.sync_api import BrowserType
    except ImportError:
        return
    BrowserType.launch = _noting("browser", BrowserType.launch)


# --- the heavy files first ------------------------------------------------------------------------
# Under pytest-xdist (--dist loadfile --no-loadscope-reorder, as the Makefile runs it) a worker takes
# the next file when it is almost done with its own. Files that drive Chromium come first, then those
# that start a server or are marked slow, then the rest: the long files start while the other worker
# still has short ones to take, and the run does not end with one worker alone on a two-minute file.
# xdist's own reorder (most tests first) put the files of a few long browser tests last. Tests keep
# their order inside a file.
HEAVIEST_FIRST = ("browser", "server", "slow")


def _weight(item) -> int:
    """A test's rank by its heaviest mark: 0 browser, 1 server, 2 slow, 3 none."""
    marks = {mark.name for mark in item.iter_markers()}
    return next((rank for rank, mark in enumerate(HEAVIEST_FIRST) if mark in marks), len(HEAVIEST_FIRST))


def pytest_collection_modifyitems(config, items):
    weight = {}  # a file's path -> the rank of its heaviest test
    for item in items:
        weight[item.path] = min(weight.get(item.path, len(HEAVIEST_FIRST)), _weight(item))
    items.sort(key=lambda item: weight[item.path])  # stable: a file's tests keep their order


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    STARTED.clear()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if call.when != "teardown" or report.failed:
        return
    unmarked = [kind for kind in sorted(STARTED)
                if not any(item.get_closest_marker(mark) for mark in NEEDS[kind])]
    if unmarked:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} started {' and '.join(unmarked)} but is not marked "
                           f"{' / '.join(NEEDS[unmarked[0]])}: add @pytest.mark.{unmarked[0]} "
                           "(make test-fast leaves marked tests out)")


@pytest.fixture
def at():
    """A fresh page, run once (AppTest): the workbench on the default example."""
    from tests.apptest_util import fresh_app

    return fresh_app()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def embedded_store(tmp_path, monkeypatch):
    """A live class on its own SQLite store under tmp_path (the store is one per process, so it is
    opened anew) and no door setting (teacher key, client address header, Redis) unless a test sets it."""
    from app.room import live

    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path))
    for name in ("MHA_TEACHER_KEY", "MHA_TEACHER_KEY_FILE", "MHA_CLIENT_IP_HEADER", "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    live.store.clear()
    live.watch.clear()
    yield tmp_path
    live.store().close()
    live.store.clear()
    live.watch.clear()


@pytest.fixture
def redis_store(tmp_path, monkeypatch):
    """The live pages on a real redis-server (tests/redis_server.py) instead of SQLite; skipped
    without one unless REQUIRE_REDIS=1."""
    from app.room import live
    from tests.redis_server import REDIS_SERVER, RedisServer

    if REDIS_SERVER is None:
        if os.environ.get("REQUIRE_REDIS") == "1":
            pytest.fail("REQUIRE_REDIS=1 but there is no redis-server")
        pytest.skip("no redis-server (apt-get install redis-server)")
    server = RedisServer(tmp_path / "redis")
    server.start()
    monkeypatch.setenv("REDIS_URL", server.url)
    live.store.clear()
    live.watch.clear()
    yield server
    live.store().close()
    server.stop()


@pytest.fixture(scope="module")
def live():
    """One real server and one Chromium for a browser test module: (url, browser)."""
    from tests.browser_env import server_and_browser

    with server_and_browser() as pair:
        yield pair
