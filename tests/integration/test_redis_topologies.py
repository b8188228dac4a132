"""The exact tier on a real 3-master Redis Cluster and behind a real Sentinel, each started on loopback ports
by the test and stopped after it."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from index.errors import StoreUnavailable
from index.records import CachedResponse
from index.storage.redis_exact import RedisExactCache
from support.services import free_port

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server not installed")]


def cluster_port() -> int:
    """A free port whose cluster bus port (+10000) is a valid, free port too."""
    while True:
        port = free_port()
        if port + 10000 > 65535:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port


def wait_for_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    """Until redis answers PING; fails at once if it exited (no client retries or backoff while waiting)."""
    client = redis.Redis(port=port, socket_timeout=0.5, socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"redis-server on port {port} exited with {proc.returncode}")
        try:
            if client.ping():
                return
        except redis.RedisError:
            time.sleep(0.05)
    raise RuntimeError(f"redis on port {port} did not start")


def server(args: list[str], workdir: Path) -> subprocess.Popen[bytes]:
    workdir.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([shutil.which("redis-server") or "redis-server", *args, "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        proc.wait(10)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[list[tuple[int, subprocess.Popen[bytes]]]]:
    ports = [cluster_port() for _ in range(3)]
    nodes = [(port, server(["--port", str(port), "--cluster-enabled", "yes", "--cluster-config-file",
                            f"nodes-{port}.conf", "--cluster-node-timeout", "2000"], tmp_path / str(port)))
             for port in ports]
    try:
        for port, proc in nodes:
            wait_for_port(port, proc)
        subprocess.run([shutil.which("redis-cli") or "redis-cli", "--cluster", "create",
                        *(f"127.0.0.1:{p}" for p in ports), "--cluster-replicas", "0", "--cluster-yes"],
                       check=True, capture_output=True, timeout=60)
        probe = redis.Redis(port=ports[0])
        for _ in range(200):
            if probe.cluster("info").get("cluster_state") == "ok":
                break
            time.sleep(0.05)
        else:
            raise RuntimeError("cluster never became ok")
        yield nodes
    finally:
        stop([proc for _, proc in nodes])


def response(i: int) -> CachedResponse:
    return CachedResponse(i, {"choices": [{"message": {"content": f"answer {i}"}}]}, 1000.0 + i)


def test_exact_tier_on_a_three_master_cluster(cluster: list[tuple[int, subprocess.Popen[bytes]]]) -> None:
    ports = [port for port, _ in cluster]
    exact = RedisExactCache(f"redis+cluster://127.0.0.1:{ports[1]}", timeout_seconds=1.0)  # any node seeds
    keys = [f"key-{i:03d}" for i in range(60)]
    for i, key in enumerate(keys):
        exact.put(key, response(i), ttl_seconds=600)
    assert [exact.get(key) for key in keys] == [response(i) for i in range(60)]
    held = [redis.Redis(port=port).dbsize() for port in ports]
    assert sum(held) == 60 and all(n > 0 for n in held)  # spread over all three masters

    exact.delete(keys[0])
    assert exact.get(keys[0]) is None
    exact.clear()
    assert all(exact.get(key) is None for key in keys)

    exact.put("after-clear", response(1), ttl_seconds=None)
    cluster[0][1].terminate()
    cluster[0][1].wait(10)
    lost = 0
    for i in range(30):  # keys on the dead master fail fast as StoreUnavailable (a counted miss), never hang
        try:
            exact.get(f"probe-{i}")
        except StoreUnavailable:
            lost += 1
    assert 0 < lost < 30


def test_exact_tier_behind_sentinel(tmp_path: Path) -> None:
    primary_port, sentinel_port = free_port(), free_port()
    procs = [server(["--port", str(primary_port)], tmp_path / "primary")]
    try:
        wait_for_port(primary_port, procs[0])
        conf = tmp_path / "sentinel.conf"
        conf.write_text(f"port {sentinel_port}\nbind 127.0.0.1\n"
                        f"sentinel monitor deja-exact 127.0.0.1 {primary_port} 1\n")
        procs.append(subprocess.Popen([shutil.which("redis-server") or "redis-server", str(conf), "--sentinel"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for_port(sentinel_port, procs[1])
        exact = RedisExactCache(f"redis+sentinel://127.0.0.1:{sentinel_port}/deja-exact/0", timeout_seconds=1.0)
        exact.put("k", response(7), ttl_seconds=60)
        assert exact.get("k") == response(7)
        assert redis.Redis(port=primary_port).exists("deja:exact:k")  # written on the primary Sentinel names
        with pytest.raises(ValueError, match="service name"):
            RedisExactCache(f"redis+sentinel://127.0.0.1:{sentinel_port}")
    finally:
        stop(procs)
