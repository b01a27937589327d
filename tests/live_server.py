"""Start a real Streamlit server on a free loopback port for browser and protocol tests."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENTRY = ROOT / "app" / "streamlit_app.py"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(*extra_args: str, timeout: float = 60.0, entry: Path = ENTRY,
                     env: Mapping[str, str | None] | None = None, log_path: Path | None = None):
    """Yield the base URL of a headless Streamlit server serving the app (or another script, entry);
    stop it afterwards. env: variables to set for it on top of this process's (None: unset);
    log_path: where its output goes (else artifacts/server-<port>.log when artifacts/ exists)."""
    port = free_port()
    command = [
        sys.executable, "-m", "streamlit", "run", str(entry),
        "--server.headless=true", "--server.address=127.0.0.1", f"--server.port={port}",
        "--browser.gatherUsageStats=false", "--server.fileWatcherType=none", *extra_args,
    ]
    env = {name: value for name, value in {**os.environ, **(env or {})}.items() if value is not None}
    env["PYTHONPATH"] = str(ROOT)
    if log_path is None and (ROOT / "artifacts").is_dir():
        log_path = ROOT / "artifacts" / f"server-{port}.log"
    log = open(log_path, "w") if log_path else None
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log or subprocess.DEVNULL,
                               stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process, timeout)
        yield url, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        if log:
            log.close()


def _wait_healthy(url: str, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited early with code {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"streamlit did not become healthy at {url} within {timeout} s")


@contextlib.contextmanager
def class_store(folder: Path, *, redis: bool = False):
    """A live-class store for a bench's servers, which inherit it through os.environ: SQLite under
    ``folder`` or, with ``redis``, a redis-server of its own; the servers count clients by
    X-Forwarded-For (as behind the Kubernetes ingress) and ask for no teacher key. Yields the
    backend's name and this process's store."""
    os.environ.update(MHA_DATA_DIR=str(folder / "data"), MHA_CLIENT_IP_HEADER="X-Forwarded-For")
    for name in ("REDIS_URL", "MHA_TEACHER_KEY", "MHA_TEACHER_KEY_FILE"):
        os.environ.pop(name, None)
    with contextlib.ExitStack() as stack:
        backend = "SQLite"
        if redis:
            from tests.redis_server import RedisServer

            server = RedisServer(folder / "redis")
            server.start()
            stack.callback(server.stop)
            os.environ["REDIS_URL"] = server.url
            backend = "Redis"
        from classroom.backends import open_store

        store = open_store()
        stack.callback(store.release)
        yield backend, store
