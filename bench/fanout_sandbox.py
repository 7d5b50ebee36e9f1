"""The sandbox GitHub that `bench.fanout` dispatches to, as a process of its own.

Run by `bench.fanout` as `python -m bench.fanout_sandbox N LATENCY`: it prints the URL
and the App's id (one JSON line), then the App's private key, and serves GitHub's API
alone until its stdin closes. For each line the parent writes, it answers one JSON line:
the calls received so far and its CPU time. That talk goes over the pipe, not HTTP, so
the server is the sandbox's GitHub app itself: a route of the benchmark's own would
need a second Starlette app around it, whose layers every dispatch would cross.

It imports the sandbox alone and freezes its start-up heap (`gc.freeze`): the relay's
modules (FastAPI, SQLAlchemy, the stores) would be ~150,000 more objects for every full
collection to walk, a cost GitHub's servers do not carry.
"""

from __future__ import annotations

import gc
import json
import sys
import threading
import time

import uvicorn

from crcr.sandbox.github_server import create_github_api
from crcr.sandbox.github_state import SandboxGitHub

ORGS = 10


def bench_repos(n: int) -> list[str]:
    """The N downstream repos, spread over `ORGS` owners (one installation each)."""
    return [f"bench-org{i % ORGS}/backend{i}" for i in range(n)]


def serve_sandbox(n: int, latency: float) -> None:
    """A sandbox with the bench repos installed, answering after `latency` seconds.

    The server runs on this process's main thread, as `crcr sandbox serve` and any real
    server do, and the parent's polls on a thread beside it: glibc gives every other
    thread a malloc arena of its own, which it shrinks and grows again around each
    25 KB request body (thousands of `mprotect` calls a second, fresh pages faulted in);
    served from a thread, the sandbox spent ~20 % more CPU per dispatch.
    """
    github = SandboxGitHub()
    github.install_app(*bench_repos(n))
    github.inject_fault("*", latency=latency)
    config = uvicorn.Config(
        create_github_api(github), host="127.0.0.1", port=0, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)

    def answer_the_parent() -> None:
        while not (server.started and server.servers):
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        gc.collect()
        gc.freeze()
        print(json.dumps({"url": f"http://127.0.0.1:{port}", "app_id": github.app.app_id}))
        print(github.app.private_key_pem.strip(), flush=True)
        for _ in sys.stdin:  # until the parent closes our stdin
            answer = {"calls": github.call_log.count(), "cpu": time.process_time()}
            print(json.dumps(answer), flush=True)
        server.should_exit = True

    threading.Thread(target=answer_the_parent, daemon=True).start()
    server.run()


if __name__ == "__main__":
    serve_sandbox(int(sys.argv[1]), float(sys.argv[2]))
