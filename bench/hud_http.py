"""The callback benchmark with the relay feeding a HUD in another process over HTTPS.

Run: `python -m bench.hud_http --hud stub|stub-h2|serve [bench.callbacks options]`, e.g.

    python -m bench.hud_http --hud stub --concurrency 1 16 64 --workers 1 2 --repeat 3 \\
        --serve-option=--no-access-log

`stub` is `bench.hud_stub` (answers 200 at once) under uvicorn; `stub-h2` the same app
under granian, which offers HTTP/2 by ALPN; `serve` is `crcr hud serve` with its own
SQLite results store. Each serves HTTPS (uvicorn: uvloop, httptools) with a self-signed
certificate made for the run, which the relay trusts through `SSL_CERT_FILE`; the relay
gets `CRCR_HUD_URL` and the shared token, as an operator feeding an external HUD sets them.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from bench import callbacks

HUD_TOKEN = "bench-hud-token"


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, as PEM files in `directory`."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "hud.crt", directory / "hud.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


HUD_KINDS = ("stub", "stub-h2", "serve")


def hud_command(kind: str, port: int, cert: Path, key: Path) -> list[str]:
    """The HUD process: the stub under uvicorn (HTTP/1.1) or granian (HTTP/2 and 1.1,
    chosen by ALPN), or `crcr hud serve`."""
    tls = ["--ssl-certfile", str(cert), "--ssl-keyfile", str(key)]
    if kind == "stub-h2":
        return [
            *(sys.executable, "-m", "granian", "bench.hud_stub:app", "--interface", "asgi"),
            *("--port", str(port), "--http", "auto", "--loop", "uvloop", "--no-ws"),
            *("--ssl-certificate", str(cert), "--ssl-keyfile", str(key), "--log-level", "warning"),
        ]
    if kind == "stub":
        return [
            *(sys.executable, "-m", "uvicorn", "bench.hud_stub:app", "--port", str(port)),
            *("--lifespan", "off", "--no-access-log", "--loop", "uvloop", "--http", "httptools"),
            *tls,
        ]
    serve = [sys.executable, "-m", "crcr", "hud", "serve", "--port", str(port)]
    return [*serve, "--no-access-log", *tls]


@contextmanager
def https_hud(kind: str) -> Iterator[tuple[str, Path]]:
    """Start the HUD; yield its ingestion URL and the certificate to trust."""
    with tempfile.TemporaryDirectory(prefix="crcr-bench-hud-") as tmp:
        cert, key = self_signed(Path(tmp))
        port = callbacks.free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRCR_")}
        env.update(CRCR_HUD_TOKEN=HUD_TOKEN, CRCR_DATA_DIR=str(Path(tmp) / "data"))
        log = (Path(tmp) / "hud.log").open("wb")
        process = subprocess.Popen(
            hud_command(kind, port, cert, key), env=env, stdout=log, stderr=subprocess.STDOUT
        )
        base = f"https://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(f"{base}/healthz", verify=str(cert), timeout=1)
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise RuntimeError("the HUD did not start") from None
                    time.sleep(0.2)
            yield f"{base}/api/crcr/results", cert
        finally:
            process.terminate()
            process.wait(timeout=30)
            log.close()


def main() -> None:
    argv = sys.argv[1:]
    kind = "stub"
    if "--hud" in argv:
        at = argv.index("--hud")
        kind = argv[at + 1]
        del argv[at : at + 2]
    if kind not in HUD_KINDS:
        raise SystemExit(f"--hud is one of {', '.join(HUD_KINDS)}")
    with https_hud(kind) as (url, cert):
        os.environ["SSL_CERT_FILE"] = str(cert)  # inherited by the relay's processes
        print(f"relay -> {kind} HUD at {url} (HTTPS)", flush=True)
        relay_env = [f"CRCR_HUD_URL={url}", f"CRCR_HUD_TOKEN={HUD_TOKEN}"]
        callbacks.main(argv + [arg for value in relay_env for arg in ("--relay-env", value)])


if __name__ == "__main__":
    main()
