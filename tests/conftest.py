"""Shared fixtures: real services, reached over real connections.

In CI (`CI=true`) a missing service fails the test; locally it skips with the reason.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.logging_restore import restore_logging  # noqa: F401  (autouse)

REDIS_URL = os.environ.get("CRCR_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
POSTGRES_URL = os.environ.get(
    "CRCR_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def require_service(name: str, host: str, port: int) -> None:
    """Skip (locally) or fail (in CI) when a service the test needs is down."""
    if _reachable(host, port):
        return
    reason = f"{name} is not reachable at {host}:{port}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI requires it)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """URL of a real Redis database reserved for tests (db 15)."""
    require_service("Redis", "127.0.0.1", 6379)
    yield REDIS_URL


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """SQLAlchemy URL of the real PostgreSQL test database."""
    require_service("PostgreSQL", "127.0.0.1", 5432)
    yield POSTGRES_URL


@pytest.fixture
def redis_namespace(redis_url: str) -> Iterator[str]:
    """A key prefix of this test's own on the test Redis, deleted afterwards.

    Synchronous on purpose: async fixtures reach it through `request.getfixturevalue`.
    """
    import redis

    prefix = f"crcr:test-{uuid.uuid4().hex[:12]}:"
    yield prefix
    with redis.Redis.from_url(redis_url) as client:
        keys = list(client.scan_iter(match=f"{prefix}*", count=500))
        if keys:
            client.delete(*keys)


@pytest.fixture(scope="session")
def redis_cluster_url() -> Iterator[str]:
    """URL of one node of a real three-master Redis Cluster this session starts.

    Its servers run on free loopback ports and stop with the session (tests/redis_cluster.py).
    Open a store on it with `RedisStateStore.from_url(url, prefix=..., cluster=True)`.
    """
    from tests.redis_cluster import running_cluster

    with running_cluster() as ports:
        yield f"redis://127.0.0.1:{ports[0]}"


@pytest.fixture
def cluster_namespace() -> str:
    """A key prefix of this test's own on the session's Redis Cluster.

    Nothing is deleted afterwards: the cluster is this session's alone and dies with it.
    """
    return f"crcr:test-{uuid.uuid4().hex[:12]}:"


TESTS = Path(__file__).resolve().parent

# `make floors` runs the tests marked `floors` on the lowest versions pyproject.toml allows.
# They are the tests of the code that calls the runtime dependencies' APIs itself, chosen
# by directory (under tests/) so that a test moving within one keeps its mark:
FLOORS = (
    ".",  # tests/test_*.py: the app and the CLI (FastAPI, Starlette, typer, uvicorn, rich)
    "web",  # the HTTP edge: bodies, wire, headers, errors, API docs (Starlette, orjson, ...)
    "ops",  # settings, secrets, logging, readiness, versions (pydantic-settings, PyYAML, ...)
    "stores",  # the state store (redis, hiredis, orjson; SQLite through anyio)
    "hud",  # the results store and its pages (SQLAlchemy, alembic, psycopg, Jinja2, FastAPI)
    "oidc",  # token verification (PyJWT, cryptography, httpx)
    "github",  # the GitHub client (httpx, PyJWT, cryptography)
    "sandbox",  # the sandbox GitHub the tests talk to (Starlette, PyJWT, uvicorn)
    "relay/callback",  # the callback edge (Starlette, pydantic, orjson, httpx)
    "relay/allowlist",  # the allowlist source (httpx, PyYAML)
)


def _in_floors(path: Path) -> bool:
    if not path.is_relative_to(TESTS):
        return False
    where = path.parent.relative_to(TESTS).as_posix()
    return any(where == top or where.startswith(f"{top}/") for top in FLOORS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests under FLOORS `floors` (`make floors` selects them with `-m floors`)."""
    for item in items:
        if _in_floors(item.path):
            item.add_marker(pytest.mark.floors)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--outage-seconds",
        type=float,
        default=3.0,
        help="length of the HUD outage in the recovery scenario (issue 16's run: 20)",
    )


@pytest.fixture
def outage_seconds(request: pytest.FixtureRequest) -> float:
    """How long the recovery scenario keeps the HUD down (`--outage-seconds`)."""
    return float(request.config.getoption("--outage-seconds"))


@pytest.fixture(autouse=True)
def calls_as_github_documents_them(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Every REST call made to a sandbox in a test, and its answer, must be as GitHub's
    published description documents them (`tests/github_description.py`).

    Data-driven over the scenarios themselves: a call the relay starts making, or an
    endpoint the sandbox starts serving, is checked by every test that exercises it.
    The sandbox's own tests are left out (they send it malformed requests on purpose),
    and so is a test marked `unlike_github`.
    """
    if "sandbox" in request.path.parts or request.node.get_closest_marker("unlike_github"):
        yield
        return
    from tests.github_description import mismatches

    from crcr.sandbox.github_state import SandboxGitHub

    created: list[SandboxGitHub] = []
    build = SandboxGitHub.__init__

    def recording(self: SandboxGitHub, *args: object, **kwargs: object) -> None:
        build(self, *args, **kwargs)  # type: ignore[arg-type]
        created.append(self)

    monkeypatch.setattr(SandboxGitHub, "__init__", recording)
    yield
    problems = sorted({problem for github in created for problem in mismatches(github.calls())})
    assert problems == [], "calls unlike GitHub's description:\n" + "\n".join(problems[:20])
