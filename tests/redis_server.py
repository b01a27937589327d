"""Run a real redis-server for tests: a free loopback port, a temporary directory, AOF persistence.

The server writes an append-only file (``appendonly yes``, ``appendfsync everysec``) and no RDB
snapshots (``save ""``), so a stop (graceful or ``kill -9``) and a start on the same directory
bring back every acknowledged write, which is what the restart tests check.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import redis

from tests.live_server import free_port

REDIS_SERVER = shutil.which("redis-server") or shutil.which("redis-server", path="/usr/bin:/usr/sbin")
START_TIMEOUT_SECONDS = 10.0


class RedisServer:
    """One redis-server process on 127.0.0.1; stop and start it again on the same port and data."""

    def __init__(self, directory: Path, port: int | None = None):
        self.directory, self.port = Path(directory), port or free_port()
        self._process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        if self.running:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        command = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--daemonize", "no",
                   "--dir", str(self.directory), "--logfile", str(self.directory / "redis.log"),
                   "--save", "", "--appendonly", "yes", "--appendfsync", "everysec"]
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self._wait_ready()

    def stop(self, *, hard: bool = False) -> None:
        """SIGTERM (Redis flushes its AOF and exits) or, with hard, SIGKILL (as a crash would)."""
        if not self.running:
            return
        self._process.send_signal(signal.SIGKILL if hard else signal.SIGTERM)
        self._process.wait(timeout=20)

    def restart(self, *, hard: bool = False) -> None:
        self.stop(hard=hard)
        self.start()

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, decode_responses=True)

    def _wait_ready(self) -> None:
        """Until PING answers (the AOF is loaded by then); RuntimeError with the log if it exits."""
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self._process.returncode}: {self._log_tail()}")
            try:
                with self.client() as client:
                    if client.ping():
                        return
            except redis.RedisError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not answer in {START_TIMEOUT_SECONDS} s: {self._log_tail()}")

    def _log_tail(self) -> str:
        log = self.directory / "redis.log"
        return log.read_text()[-2000:] if log.exists() else "(no log)"
