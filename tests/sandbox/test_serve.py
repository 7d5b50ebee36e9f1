"""`crcr sandbox` serves the GitHub stand-in and the OIDC issuer on a real port."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from crcr.github.client import GitHubClient
from crcr.sandbox.serve import build_server


def test_building_binds_a_free_port_and_writes_the_key_privately(tmp_path: Path) -> None:
    server = build_server("127.0.0.1", 0, tmp_path / "keys" / "app.pem", installed_repos=["o/r"])
    try:
        port = server.sock.getsockname()[1]
        key_mode = stat.S_IMODE(server.key_path.stat().st_mode)

        assert port > 0 and server.base_url == f"http://127.0.0.1:{port}"
        assert server.key_path.read_text() == server.github.app.private_key_pem
        assert key_mode == 0o600
        assert server.issuer_url == f"{server.base_url}/oidc"
        assert f"CRCR_GITHUB_APP_ID={server.github.app.app_id}" in server.banner()
        assert server.github.installation_of_repo("o/r")
    finally:
        server.sock.close()


@pytest.fixture
async def running_sandbox(tmp_path: Path) -> AsyncIterator[dict[str, str]]:
    """`crcr sandbox --port 0` in a child process; yields what its banner announced."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from crcr.cli import main; main()",
        "sandbox",
        "--port",
        "0",
        "--key-file",
        str(tmp_path / "app.pem"),
        "--install",
        "org/backend",
        "--api-prefix",
        "/api/v3",
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    announced: dict[str, str] = {}
    try:
        async with asyncio.timeout(30):
            while "issuer" not in announced:
                line = (await process.stdout.readline()).decode().strip()
                assert line, "the sandbox exited before announcing itself"
                if line.startswith("OIDC issuer: "):
                    announced["issuer"] = line.removeprefix("OIDC issuer: ")
                elif "=" in line:
                    name, _, value = line.partition("=")
                    announced[name] = value
        yield announced
    finally:
        process.terminate()
        await process.wait()


async def test_a_relay_pointed_at_the_banner_can_dispatch(running_sandbox: dict[str, str]) -> None:
    pem = Path(running_sandbox["CRCR_GITHUB_APP_PRIVATE_KEY"]).read_text()
    async with GitHubClient(
        running_sandbox["CRCR_GITHUB_API_URL"],
        running_sandbox["CRCR_GITHUB_APP_ID"],
        pem,
        None,
        timeout=5,
    ) as client:
        await client.dispatch("org/backend", "push", {"delivery_id": "d-1"})
        repo = await client.get_repo("org/backend")

    async with httpx.AsyncClient() as http:
        jwks = await http.get(running_sandbox["issuer"] + "/.well-known/jwks")

    assert running_sandbox["CRCR_GITHUB_API_URL"].endswith("/api/v3")
    assert repo["full_name"] == "org/backend"
    assert jwks.status_code == 200 and jwks.json()["keys"]
