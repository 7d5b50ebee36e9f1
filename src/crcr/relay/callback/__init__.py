"""Downstream → HUD: `POST /github/callback`, checked in SPEC §5's order.

In flow order: `endpoint` (token, level, rate limit), `schema` (the body), `self_report`
(nightly/periodic reports, which skip the rest), `binding` (to the dispatch record),
`job_state` (the per-job state machine), `accept` (the atomic transition, timing, the
HUD write and the hooks), `hud_body` and `hud_forwarder` (the SPEC §6 body and its
delivery). `deps` is what the endpoint needs from the rest of crcr.
"""
