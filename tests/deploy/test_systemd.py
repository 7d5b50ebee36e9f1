"""The systemd units in deploy/systemd: commands, settings and hardening crcr and systemd accept."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from tests.deploy.recipes import (
    DEPLOY,
    exec_words,
    parse_crcr,
    unit_entries,
    unknown_variables,
)
from tests.deploy.test_container import healthcheck_command

UNITS = sorted((DEPLOY / "systemd").glob("*.service"))
CRCR = Path(sys.executable).with_name("crcr")


def _values(unit: Path, key: str) -> list[str]:
    return [value for _, name, value in unit_entries(unit) if name == key]


def _environment(unit: Path) -> dict[str, str]:
    pairs = (value.partition("=") for value in _values(unit, "Environment"))
    return {name: value for name, _, value in pairs}


def _systemd_analyze() -> str:
    path = shutil.which("systemd-analyze")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("systemd-analyze is missing: install systemd to check the units")
        pytest.skip("systemd-analyze is not installed here")
    return path


def _runnable_copy(unit: Path, directory: Path) -> Path:
    """The unit as systemd would find it here: crcr at this venv's path, no /etc files."""
    text = unit.read_text().replace("/opt/crcr/bin/crcr", str(CRCR))
    text = text.replace("EnvironmentFile=/", "EnvironmentFile=-/")
    copy = directory / unit.name
    copy.write_text(text)
    return copy


def test_there_is_a_unit_for_the_relay_and_one_for_the_sweeper() -> None:
    assert [unit.name for unit in UNITS] == ["crcr-sweeper.service", "crcr.service"]


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_each_unit_starts_a_crcr_command_that_exists(unit: Path) -> None:
    (start,) = _values(unit, "ExecStart")
    words = exec_words(start)

    assert words[0] == "/opt/crcr/bin/crcr"
    parse_crcr(words[1:])  # raises on a command or option crcr does not have


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_each_unit_sets_only_variables_crcr_reads(unit: Path) -> None:
    assert unknown_variables(_environment(unit)) == []


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_secrets_come_from_credentials_the_unit_loads(unit: Path) -> None:
    loaded = {value.partition(":")[0] for value in _values(unit, "LoadCredential")}
    named = {
        value.removeprefix("%d/")
        for name, value in _environment(unit).items()
        if name.endswith("_FILE")
    }

    assert named and named == loaded
    assert not {"CRCR_WEBHOOK_SECRET", "CRCR_HUD_TOKEN"} & set(_environment(unit))


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_systemd_accepts_each_unit_without_a_warning(unit: Path, tmp_path: Path) -> None:
    analyze = _systemd_analyze()
    result = subprocess.run(
        [analyze, "verify", str(_runnable_copy(unit, tmp_path))],
        capture_output=True,
        text=True,
        check=False,
    )

    assert (result.returncode, result.stderr) == (0, "")


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_each_unit_is_hardened_to_systemds_ok_exposure(unit: Path, tmp_path: Path) -> None:
    analyze = _systemd_analyze()
    result = subprocess.run(
        [
            analyze,
            "security",
            "--offline=true",
            "--threshold=20",
            str(_runnable_copy(unit, tmp_path)),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    exposure = re.search(r"Overall exposure level for \S+: ([\d.]+)", result.stdout)

    assert exposure is not None, result.stdout + result.stderr
    assert float(exposure.group(1)) <= 2.0
    assert result.returncode == 0


def _credentials(directory: Path) -> Path:
    """What `LoadCredential=` would put in `%d`: a webhook secret, an App key, a HUD token."""
    directory.mkdir(mode=0o700)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    (directory / "app-key.pem").write_bytes(pem)
    (directory / "webhook-secret").write_text("a-webhook-secret\n")
    (directory / "hud-token").write_text("a-hud-token\n")
    return directory


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run_environment(unit: Path, tmp_path: Path) -> dict[str, str]:
    """The unit's Environment= lines as it would run here: credentials, state and the
    allowlist in `tmp_path`, GitHub at a closed port, nothing inherited from `CRCR_*`."""
    credentials = _credentials(tmp_path / "credentials")
    allowlist = tmp_path / "allowlist.yml"
    allowlist.write_text("L2:\n  - vendor/backend\n")
    inherited = {key: value for key, value in os.environ.items() if not key.startswith("CRCR_")}
    written = {
        name: value.replace("%d", str(credentials)) for name, value in _environment(unit).items()
    }
    return (
        inherited
        | written
        | {
            "CRCR_ALLOWLIST": str(allowlist),
            "CRCR_DATA_DIR": str(tmp_path / "state"),
            "CRCR_PORT": str(_free_port()),
            "CRCR_GITHUB_APP_ID": "1",
            "CRCR_GITHUB_API_URL": f"http://127.0.0.1:{_free_port()}",
        }
    )


def _start(unit: Path, environment: dict[str, str]) -> subprocess.Popen[str]:
    (start,) = _values(unit, "ExecStart")
    return subprocess.Popen(
        exec_words(start.replace("/opt/crcr/bin/crcr", str(CRCR))),
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _stop_within_the_units_timeout(unit: Path, process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGTERM)
    (timeout,) = _values(unit, "TimeoutStopSec")
    output, _ = process.communicate(timeout=float(timeout))
    return output


def test_the_relay_unit_serves_as_written_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    """Runs the unit's ExecStart with its Environment= lines, then the container's health
    check against it, then SIGTERM: exit 0 within TimeoutStopSec, no secret printed."""
    unit = DEPLOY / "systemd" / "crcr.service"
    environment = _run_environment(unit, tmp_path)
    port = int(environment["CRCR_PORT"])
    process = _start(unit, environment)
    try:
        _wait_until_healthy(port, process)
        health = subprocess.run(
            healthcheck_command(),
            env=environment,
            capture_output=True,
            text=True,
            check=False,
        )
        assert health.returncode == 0, health.stderr
        output = _stop_within_the_units_timeout(unit, process)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()

    assert process.returncode == 0, output
    assert "a-webhook-secret" not in output and "PRIVATE KEY" not in output


def test_the_sweeper_unit_sweeps_as_written_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    unit = DEPLOY / "systemd" / "crcr-sweeper.service"
    process = _start(unit, _run_environment(unit, tmp_path))
    watchdog = threading.Timer(60.0, process.kill)  # a loop that never starts fails, not hangs
    watchdog.start()
    seen: list[str] = []
    try:
        assert process.stdout is not None
        for line in process.stdout:  # ends at exit if the loop never starts
            seen.append(line)
            if "sweeping every" in line:
                break
        started = process.poll() is None
        output = _stop_within_the_units_timeout(unit, process) if started else ""
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
            process.communicate()

    assert started, "".join(seen)
    assert process.returncode == 0, "".join(seen) + output


def _wait_until_healthy(port: int, process: subprocess.Popen[str]) -> None:
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=1.0) as client:
        for _ in range(600):
            if process.poll() is not None:
                output = process.stdout.read() if process.stdout else ""
                pytest.fail(f"crcr serve exited {process.returncode}: {output}")
            try:
                if client.get("/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.05)
    pytest.fail("crcr serve did not answer /healthz within 30 s")
