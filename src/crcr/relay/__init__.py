"""The relay: webhooks in, dispatches out, callbacks verified and forwarded.

Read the sub-packages in the order an event goes through them:

- `allowlist/`: who the downstream repositories are and at which level (SPEC §3);
  every later step asks it.
- `webhook/`: an upstream webhook is verified, routed, and fanned out as one
  `repository_dispatch` per downstream, each behind a dispatch record (SPEC §4).
- `callback/`: downstream CI reports back; the report is checked in SPEC §5's order,
  bound to its dispatch record, moved through the job state machine and forwarded to
  the HUD.
- `jobs/` is the core the callback, the sweeper and the checks share without importing
  one another: the job state machine, dispatch records, the typed job record (`Job`)
  and the event hooks get when a job moves; `results/` writes a job's HUD row for the
  callback and the sweeper alike.
- `checks/`: an accepted L3/L4 job becomes a check run on the upstream commit, and a
  failing one tells the backend's oncalls (SPEC §7).
- `sweeper/`: in the background, what never finished is finalised and every retry
  queue is drained.
- `levels/`: the levels looking back on results (SPEC §10.1): a backend the HUD says
  should drop a level is temporarily demoted for new jobs (which `checks/` asks), and
  its allowlist change is proposed as a pull request.
"""
