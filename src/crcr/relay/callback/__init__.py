"""Downstream → HUD: `POST /github/callback`, checked in SPEC §5's order.

In flow order: `endpoint` (token, level, rate limit), `schema` (the body), `self_report`
(nightly/periodic reports, which skip the rest), `binding` (to the dispatch record),
`accept` (the job's atomic transition through `jobs/`, timing, the HUD write through
`results/` and the hooks). `deps` is what the endpoint needs from the rest of crcr.
"""
