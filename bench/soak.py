"""Soak: N minutes of mixed traffic through a real uvicorn gateway and a stub upstream, with a Redis restart and a
PostgreSQL restart mid-run. Every minute: requests, p50/p99, 2xx/4xx/5xx (5xx inside an injected outage counted
apart), the gateway's RSS and open files, and the entries it holds.

    .venv/bin/python -m bench.soak [--minutes 10] [--clients 4] [--no-pg]

Traffic: repeats, paraphrases, near-twins (one number changed), streams, the three APIs, long prompts and malformed
requests. Redis and PostgreSQL are private instances on spare ports (never the machine's shared 6379 / 5432):
Redis is restarted at a third of the run, PostgreSQL (initdb + pg_ctl as the `postgres` user; skipped with a note
when that is not possible, then the gateway uses SQLite) at two thirds.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.common import p
from support.services import GatewayProcess, PrivateRedis, free_port
from support.stub_upstream import StubUpstream

ADMIN = "soak-admin"
OUTAGE_GRACE = 5.0  # seconds after a restart ends during which 5xx still count as the outage's
TOPICS = ["reset my password", "export my invoices", "change the billing email", "enable two factor login",
          "delete a project", "invite a teammate", "rotate an API key", "download the audit log",
          "cancel my subscription", "move a workspace", "set up single sign on", "raise my rate limit"]
OPENERS = ["How do I", "How can I", "What is the way to", "Could you tell me how to", "Explain how to"]


@dataclass
class Minute:
    latencies: list[float] = field(default_factory=list)
    status: dict[str, int] = field(default_factory=dict)  # "2xx", "4xx", "5xx", "5xx-outage", "error"


class Recorder:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self.minutes: dict[int, Minute] = {}
        self.outages: list[tuple[float, float]] = []
        self.lock = threading.Lock()

    def now(self) -> float:
        return time.monotonic() - self.started

    def in_outage(self, at: float) -> bool:
        return any(start <= at <= end + OUTAGE_GRACE for start, end in self.outages)

    def record(self, at: float, ms: float, status: int | None) -> None:
        kind = "error" if status is None else f"{status // 100}xx"
        if kind == "5xx" and self.in_outage(at):
            kind = "5xx-outage"
        with self.lock:
            minute = self.minutes.setdefault(int(at // 60), Minute())
            minute.latencies.append(ms)
            minute.status[kind] = minute.status.get(kind, 0) + 1


def _prompt(rng: random.Random) -> str:
    kind = rng.random()
    topic = rng.choice(TOPICS)
    if kind < 0.45:
        return f"How do I {topic}?"  # repeats
    if kind < 0.7:
        return f"{rng.choice(OPENERS)} {topic}?"  # paraphrases
    if kind < 0.9:
        return f"How do I {topic} for team {rng.randint(1, 50)}?"  # near-twins: one number differs
    return f"Here is my config: {'option=value ' * rng.randint(500, 900)}. How do I {topic}?"  # long


def _request(rng: random.Random) -> tuple[str, dict[str, str], bytes | dict[str, Any]]:
    """(path, headers, JSON body or raw bytes) of one request of the mix."""
    tenant = f"sk-soak-{rng.randint(1, 3)}"
    if rng.random() < 0.05:  # malformed: not JSON, wrong types, missing fields
        raw = rng.choice([b"{not json", b'{"model": 5, "messages": "x"}', b"[]", b'{"messages": []}'])
        return "/v1/chat/completions", {"Authorization": f"Bearer {tenant}", "content-type": "application/json"}, raw
    text, stream = _prompt(rng), rng.random() < 0.3
    api = rng.choice(["chat", "chat", "messages", "responses"])
    if api == "messages":
        return "/v1/messages", {"x-api-key": tenant, "anthropic-version": "2023-06-01"}, {
            "model": "claude-soak", "max_tokens": 64, "stream": stream,
            "messages": [{"role": "user", "content": text}]}
    if api == "responses":
        return "/v1/responses", {"Authorization": f"Bearer {tenant}"}, {"model": "gpt-soak", "input": text,
                                                                         "stream": stream}
    return "/v1/chat/completions", {"Authorization": f"Bearer {tenant}"}, {
        "model": "gpt-soak", "stream": stream, "messages": [{"role": "user", "content": text}]}


def _client(url: str, seed: int, stop: threading.Event, recorder: Recorder) -> None:
    rng = random.Random(seed)
    with httpx.Client(base_url=url, timeout=60) as client:
        while not stop.is_set():
            path, headers, payload = _request(rng)
            at, started = recorder.now(), time.perf_counter()
            status: int | None
            try:
                if isinstance(payload, bytes):
                    response = client.post(path, content=payload, headers=headers)
                else:
                    response = client.post(path, json=payload, headers=headers)
                status = response.status_code
            except httpx.HTTPError:
                status = None
            recorder.record(at, (time.perf_counter() - started) * 1000, status)


def _serve_stub(urls: Any, stop: Any) -> None:
    with StubUpstream() as stub:
        urls.put(stub.url)
        stop.wait()


class PrivatePostgres:
    """A PostgreSQL cluster of our own (initdb in a temp dir, a spare port), run as the `postgres` user."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.data = workdir / "pgdata"
        self.url = f"postgresql+psycopg2://postgres@127.0.0.1:{self.port}/postgres"

    def _as_postgres(self, *args: str) -> None:
        runner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        # Never a pipe: a server started by pg_ctl inherits its output and would hold the pipe open forever.
        subprocess.run([*runner, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=120)

    def _ctl(self, *args: str) -> None:
        self._as_postgres("pg_ctl", "-D", str(self.data), "-w", "-l", str(self.data / "log"), *args)

    def start(self) -> None:
        if not self.data.exists():
            self.data.mkdir(parents=True)
            if os.geteuid() == 0:
                shutil.chown(self.data, "postgres", "postgres")
            self._as_postgres("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres")
        self._ctl("-o", f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data}", "start")

    def restart(self) -> None:
        self._ctl("-m", "fast", "restart")

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # not running
            self._ctl("-m", "fast", "stop")


def _sample(pid: int) -> tuple[float, int]:
    """(RSS in MB, open file descriptors) of a process."""
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    return rss_kb / 1024, len(os.listdir(f"/proc/{pid}/fd"))


def _outage(recorder: Recorder, name: str, action: Callable[[], None]) -> None:
    start = recorder.now()
    action()
    recorder.outages.append((start, recorder.now()))
    print(f"[{recorder.now():6.0f}s] {name} restarted ({recorder.now() - start:.1f} s)", flush=True)


def run(tmp: Path, args: argparse.Namespace) -> None:
    ctx = mp.get_context("spawn")
    urls, stop_stub = ctx.Queue(), ctx.Event()
    stub = ctx.Process(target=_serve_stub, args=(urls, stop_stub), daemon=True)
    stub.start()
    redis = PrivateRedis(tmp)
    redis.start()
    pg: PrivatePostgres | None = None
    if args.pg:
        try:
            pg = PrivatePostgres(tmp)
            pg.start()
        except (OSError, subprocess.SubprocessError) as exc:
            print(f"note: PostgreSQL restart skipped, no private cluster could start ({exc}); SQLite instead")
            pg = None
    stub_url = urls.get(timeout=60)
    env = {"DEJA_UPSTREAM_URL": stub_url, "DEJA_ANTHROPIC_UPSTREAM_URL": stub_url, "DEJA_DATA_DIR": str(tmp / "gw"),
           "DEJA_LOG_LEVEL": "warning", "DEJA_REDIS_URL": redis.url, "DEJA_ADMIN_TOKEN": ADMIN}
    if pg is not None:
        env["DEJA_DATABASE_URL"] = pg.url
    gateway = GatewayProcess(env, tmp / "gw.log").start()
    recorder, stop = Recorder(), threading.Event()
    rows: list[tuple[int, float, int, int]] = []
    clients = [threading.Thread(target=_client, args=(gateway.url, i, stop, recorder), daemon=True)
               for i in range(args.clients)]
    try:
        recorder.started = time.monotonic()
        for thread in clients:
            thread.start()
        duration = args.minutes * 60
        def restart_redis() -> None:
            redis.stop()
            time.sleep(3)  # down long enough for requests to meet it
            redis.start()

        events: list[tuple[float, str, Callable[[], None]]] = [(duration / 3, "redis", restart_redis)]
        if pg is not None:
            events.append((2 * duration / 3, "postgresql", pg.restart))
        next_sample = 60.0
        while recorder.now() < duration:
            time.sleep(1)
            if events and recorder.now() >= events[0][0]:
                _, name, action = events.pop(0)
                _outage(recorder, name, action)
            if recorder.now() >= next_sample:
                rss, fds = _sample(gateway.pid)
                entries = httpx.get(gateway.url + "/deja/stats", headers={"Authorization": f"Bearer {ADMIN}"},
                                    timeout=30).json().get("entries", -1)
                rows.append((int(next_sample // 60) - 1, rss, fds, entries))
                print(f"[{recorder.now():6.0f}s] rss {rss:.0f} MB, fds {fds}, entries {entries}", flush=True)
                next_sample += 60
    finally:
        stop.set()
        for thread in clients:
            thread.join(90)
        gateway.stop()
        redis.stop()
        stop_stub.set()
        stub.join(30)
        if pg is not None:
            pg.stop()
    report(recorder, rows)


def report(recorder: Recorder, rows: list[tuple[int, float, int, int]]) -> None:
    print(f"\n{'min':>3}{'requests':>10}{'p50 ms':>9}{'p99 ms':>9}{'2xx':>7}{'4xx':>6}{'5xx':>5}{'5xx in outage':>15}"
          f"{'errors':>8}{'RSS MB':>8}{'fds':>6}{'entries':>9}")
    for minute, rss, fds, entries in rows:
        m = recorder.minutes.get(minute, Minute())
        s = m.status
        lat = m.latencies or [0.0]
        print(f"{minute + 1:>3}{len(m.latencies):>10}{statistics.median(lat):>9.1f}{p(lat, 0.99):>9.1f}"
              f"{s.get('2xx', 0):>7}{s.get('4xx', 0):>6}{s.get('5xx', 0):>5}{s.get('5xx-outage', 0):>15}"
              f"{s.get('error', 0):>8}{rss:>8.0f}{fds:>6}{entries:>9}")
    outside = sum(m.status.get("5xx", 0) + m.status.get("error", 0) for m in recorder.minutes.values())
    print(f"5xx or transport errors outside the injected outages: {outside}")
    if len(rows) >= 3:
        (_, rss_warm, _, entries_warm), (_, rss_end, _, entries_end) = rows[1], rows[-1]
        print(f"RSS after warm-up (minute 2) -> end: {rss_warm:.0f} -> {rss_end:.0f} MB "
              f"({rss_end - rss_warm:+.0f} MB) while entries went {entries_warm} -> {entries_end}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--no-pg", dest="pg", action="store_false", help="SQLite, no PostgreSQL restart")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        run(Path(tmp), args)


if __name__ == "__main__":
    main()
