"""A HUD that answers 200 at once: the far end for measuring the relay's HTTP HUD path alone.

Run: `uvicorn bench.hud_stub:app --ssl-certfile … --ssl-keyfile …` (see `bench.hud_http`).
It reads the whole body (a real HUD must) and answers what `crcr hud serve` answers to
a new row, so the relay's work per forward is the same as against a real HUD.
"""

from __future__ import annotations

from starlette.types import Message, Receive, Scope, Send

ANSWER = b'{"ok":true,"outcome":"created","job_key":"stub"}'
HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(ANSWER)).encode())]


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """Drain the request body, then answer 200."""
    if scope["type"] != "http":
        return
    message: Message = {"more_body": True}
    while message.get("more_body", False):
        message = await receive()
        if message["type"] == "http.disconnect":
            return
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": ANSWER})
