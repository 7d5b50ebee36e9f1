"""Upstream → downstream: `POST /github/webhook` to one `repository_dispatch` per downstream.

In flow order: `endpoint` takes the request, `signature` verifies it, `events` routes
it, `client_payload` builds (and trims) what is sent, `fanout` writes a dispatch record
(`records`) before each dispatch and queues what fails; `reruns` answers a maintainer's
"Re-run" on a crcr check.
"""
