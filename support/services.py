"""Real services for integration tests: a gateway in its own uvicorn process, a private PostgreSQL
database, a private redis-server on a spare port."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import psycopg2

from support.waiting import wait_for

PG_ADMIN_DSN = "host=127.0.0.1 port=5432 user=postgres dbname=test"
REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def _end(proc: subprocess.Popen[bytes] | None, hard: bool = False) -> None:
    """Stop a child we started: SIGTERM (SIGKILL if it lingers 20 s), or SIGKILL at once when `hard`."""
    if proc is None:
        return
    if hard:
        proc.kill()
    else:
        proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


class PgDatabase:
    """A throwaway PostgreSQL database owned by one test or fixture."""

    def __init__(self) -> None:
        self.name = f"deja_{uuid.uuid4().hex[:12]}"
        self.url = f"postgresql+psycopg2://postgres@127.0.0.1:5432/{self.name}"

    def _admin(self, sql: str) -> None:
        conn = psycopg2.connect(PG_ADMIN_DSN)
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
        finally:
            conn.close()

    def __enter__(self) -> PgDatabase:
        self._admin(f"CREATE DATABASE {self.name}")
        return self

    def __exit__(self, *exc: object) -> None:
        self._admin(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")


class PrivateRedis:
    """A redis-server of our own on a spare port, so tests may stop it without touching the shared one."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._workdir = workdir
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._proc = subprocess.Popen(
            [shutil.which("redis-server") or "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", str(self._workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_for(lambda: _listening(self.port)):
            raise RuntimeError("private redis-server did not start")

    def stop(self) -> None:
        _end(self._proc)
        self._proc = None

    def __enter__(self) -> PrivateRedis:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class GatewayProcess:
    """`python -m service serve` in a subprocess with the given DEJA_* environment."""

    def __init__(self, env: dict[str, str], log_path: Path, source: Path = REPO) -> None:
        """`source`: the source tree it runs from (a benchmark may start another build beside this one)."""
        self.source = source
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = env
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        """The server's process id (for a profiler or a kill); only while it runs."""
        assert self._proc is not None, "not started"
        return self._proc.pid

    @property
    def data_dir(self) -> Path:
        """The `DEJA_DATA_DIR` it was started with (its SQLite file and secret live there)."""
        return Path(self.env["DEJA_DATA_DIR"])

    def start(self, timeout: float = 120.0) -> GatewayProcess:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", **self.env}
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "service", "serve", "--host", "127.0.0.1", "--port", str(self.port)],
                env=env, cwd=self.source, stdout=log, stderr=subprocess.STDOUT)
        if not wait_for(self._ready, timeout, interval=0.2):
            raise RuntimeError(f"gateway did not come up: {self.log_path.read_text()[-3000:]}")
        return self

    def _ready(self) -> bool:
        assert self._proc is not None
        if self._proc.poll() is not None:
            raise RuntimeError(f"gateway exited: {self.log_path.read_text()[-3000:]}")
        try:
            return httpx.get(self.url + "/readyz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        _end(self._proc)
        self._proc = None

    def kill(self) -> None:
        """`kill -9`: no shutdown, no flush, whatever was in flight is cut."""
        _end(self._proc, hard=True)
        self._proc = None

    def restart(self) -> None:
        self.stop()
        self.start()
