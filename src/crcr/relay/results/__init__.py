"""Results → HUD: the SPEC §6 body, its delivery, and the `hud` queue's retries.

Its own package, beside `callback/` and `sweeper/` rather than inside either, because
both write HUD rows (a callback its job's, the sweeper a timed-out or redone one) and
neither may depend on the other. `body` builds the body (pure), `forwarder` delivers it
in-process or over HTTP and queues what fails, `retry` is the queue's handler.
"""
