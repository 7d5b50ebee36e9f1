"""A real three-master Redis Cluster on loopback ports, started and torn down by the tests.

`tests/conftest.py` turns it into the session fixture `redis_cluster_url` (the URL of one
node, as `CRCR_REDIS_URL` would name it with `CRCR_REDIS_CLUSTER=true`). Every store test
runs on it through the `store` fixture of tests/stores; a test of another area that wants
the cluster asks for `redis_cluster_url` and a unique key prefix (`cluster_namespace`).
Nothing of it outlives the session: the servers run in a temporary directory, without
persistence, and are stopped at the end.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

MASTERS = 3
START_SECONDS = 30.0


def require_redis_binaries() -> tuple[str, str]:
    """`redis-server` and `redis-cli`, or skip (locally) / fail (in CI) without them."""
    server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if server and cli:
        return server, cli
    reason = "redis-server and redis-cli are needed to start a Redis Cluster"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI requires them)")
    pytest.skip(reason)


def _free_cluster_port() -> int:
    """A loopback port free now whose cluster bus port (port + 10000) is free too."""
    for _ in range(100):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port + 10000 > 65535:
            continue
        try:
            with socket.socket() as bus:
                bus.bind(("127.0.0.1", port + 10000))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port pair for a Redis Cluster node")


def _cli(cli: str, port: int, *args: str) -> str:
    done = subprocess.run(
        [cli, "-h", "127.0.0.1", "-p", str(port), *args],
        capture_output=True,
        text=True,
        timeout=START_SECONDS,
        check=False,
    )
    return done.stdout + done.stderr


def _wait_until(condition: str, check: object, deadline: float) -> None:
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise RuntimeError(f"Redis Cluster: {condition} not reached in {START_SECONDS} s")
        time.sleep(0.05)


@contextmanager
def running_cluster() -> Iterator[list[int]]:
    """Start `MASTERS` cluster-enabled servers, join them, wait for `cluster_state:ok`.

    Yields the nodes' ports. Ports are chosen free at run time; should another process
    take one between the choice and the server's start, the server exits and the start
    fails with the server's own message.
    """
    server, cli = require_redis_binaries()
    with ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="crcr-rc-")))
        ports: list[int] = []
        for _ in range(MASTERS):
            port = _free_cluster_port()
            node_dir = directory / str(port)
            node_dir.mkdir()
            options = [
                "--port", str(port), "--bind", "127.0.0.1", "--dir", str(node_dir),
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", "5000", "--save", "", "--appendonly", "no",
            ]  # fmt: skip
            log = (node_dir / "server.log").open("w")
            stack.callback(log.close)
            process = subprocess.Popen([server, *options], stdout=log, stderr=subprocess.STDOUT)
            stack.callback(_stop, process)
            ports.append(port)
            deadline = time.monotonic() + START_SECONDS

            def answers(port: int = port, process: subprocess.Popen[bytes] = process) -> bool:
                if process.poll() is not None:
                    text = (directory / str(port) / "server.log").read_text()
                    raise RuntimeError(f"redis-server on port {port} exited: {text[-500:]}")
                return "PONG" in _cli(cli, port, "ping")

            _wait_until("every node answering", answers, deadline)
        nodes = [f"127.0.0.1:{port}" for port in ports]
        created = _cli(
            cli, ports[0], "--cluster", "create", *nodes, "--cluster-replicas", "0", "--cluster-yes"
        )
        if "[OK] All 16384 slots covered" not in created:
            raise RuntimeError(f"redis-cli --cluster create failed:\n{created[-2000:]}")
        deadline = time.monotonic() + START_SECONDS
        for port in ports:
            _wait_until(
                "cluster_state:ok",
                lambda port=port: "cluster_state:ok" in _cli(cli, port, "cluster", "info"),
                deadline,
            )
        yield ports


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
