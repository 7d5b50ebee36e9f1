"""The standard-library `Send` answers every status as an `Answer` and names what failed."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from crcr.reporter.transport import MAX_ANSWER_BYTES, Answer, NetworkError, UrllibSend


class Handler(BaseHTTPRequestHandler):
    """Answers by path: /refuse 400 JSON, /moved 308, /huge a body past the cap, else 200."""

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        received = self.rfile.read(length)
        if self.path == "/refuse":
            self._answer(400, b'{"detail": "no dispatch record"}')
        elif self.path == "/moved":
            self.send_response(308)
            self.send_header("Location", "http://relay.example/github/callback")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/huge":
            self._answer(200, b"x" * (MAX_ANSWER_BYTES * 2))
        else:
            self._answer(200, b'{"echo": "' + received + b'"}')

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Retry-After", "7")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        return None


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def post(url: str, *, timeout: float = 5.0) -> Answer:
    send = UrllibSend(timeout)
    return asyncio.run(send("POST", url, {"Content-Type": "application/json"}, b"hi"))


def test_a_success_carries_status_text_and_lower_case_headers(server: str) -> None:
    answer = post(f"{server}/callback")
    assert (answer.status_code, answer.json()) == (200, {"echo": "hi"})
    assert answer.headers["retry-after"] == "7"


def test_a_refusal_is_an_answer_not_an_exception(server: str) -> None:
    answer = post(f"{server}/refuse")
    assert answer.status_code == 400
    assert answer.json() == {"detail": "no dispatch record"}


def test_a_redirect_is_handed_back_not_followed(server: str) -> None:
    answer = post(f"{server}/moved")
    assert answer.status_code == 308
    assert answer.headers["location"] == "http://relay.example/github/callback"


def test_a_huge_answer_is_read_no_further_than_the_cap(server: str) -> None:
    assert len(post(f"{server}/huge").text) == MAX_ANSWER_BYTES


def test_a_closed_port_is_a_connect_error() -> None:
    with socket.socket() as held:  # bound, never listening: connections are refused
        held.bind(("127.0.0.1", 0))
        with pytest.raises(NetworkError) as caught:
            post(f"http://127.0.0.1:{held.getsockname()[1]}/callback")
    assert caught.value.kind == "ConnectError"


def test_a_server_that_never_answers_times_out() -> None:
    with socket.socket() as silent:  # listening, so the connection is made, but never read
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        with pytest.raises(NetworkError) as caught:
            post(f"http://127.0.0.1:{silent.getsockname()[1]}/callback", timeout=1.0)
    assert caught.value.kind == "Timeout"
