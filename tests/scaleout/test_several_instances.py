"""Several instances, one deployment (issue 17, Deliver 1), told with real processes.

Two `crcr serve` instances (A and B) and one `crcr sweep --loop` share one Redis (a key
prefix of the test's own) and, through an external `crcr hud serve`, one PostgreSQL
(a schema of the test's own); the sandbox stands in for GitHub. No instance holds
state another needs:

- a webhook reaches A, and each job's callbacks go to B and A in turn;
- 50 identical callbacks raced over both instances have one effect (one HUD row write,
  one check run per transition);
- a HUD outage is drained by whichever processes are alive, each result once;
- the sweeper's leader is SIGKILLed while it times out zombie jobs; another process
  leads within the lock's lifetime and every zombie is timed out exactly once (a body
  the dead leader had on the wire is sent again, and only such a body);
- GitHub, the OIDC issuer and the allowlist are asked once for what the instances
  share through the state store (installation lookups, tokens, JWKS, allowlist).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path

import httpx
from tests.scaleout.deployment import (
    ALLOWLIST_PATH,
    L2_REPOS,
    L4_REPO,
    UPSTREAM,
    Child,
    Deployment,
    deployment,
)
from tests.scaleout.test_failover import record
from tests.waiting import eventually

from crcr.relay.checks.check_runs import check_run_name
from crcr.relay.sweeper.sweeper import HUD_PARALLEL

ZOMBIE_TIMEOUT = 25  # seconds: the zombies of the last act become due during the test
RACERS = 50


async def race(placed: Deployment, relays: list[Child], repo: str, delivery: str, job: str) -> None:
    """`RACERS` identical completed callbacks at once, spread over the instances."""
    headers, body = placed.callback(repo, delivery, job, "completed")

    async def one(n: int) -> httpx.Response:
        url = f"{relays[n % len(relays)].url}/github/callback"
        return await placed.http.post(url, content=body, headers=headers)

    answers = await asyncio.gather(*(one(n) for n in range(RACERS)))
    outcomes = Counter((a.status_code, a.json().get("status")) for a in answers)
    assert outcomes == {(200, "accepted"): 1, (200, "duplicate"): RACERS - 1}, outcomes


async def test_two_instances_and_a_sweeper_share_one_deployment(
    tmp_path: Path, redis_url: str, redis_namespace: str, postgres_schema_url: str
) -> None:
    async with deployment(
        tmp_path,
        redis_url=redis_url,
        redis_prefix=redis_namespace,
        CRCR_ZOMBIE_TIMEOUT=str(ZOMBIE_TIMEOUT),
    ) as placed:
        await placed.start_hud(postgres_schema_url)
        a = await placed.start_relay("relay-a")
        b = await placed.start_relay("relay-b")
        sweeper = await placed.start_sweeper()
        relays = [a, b]
        delivery = await placed.open_pr(a, 201)

        # Act 1: a job's callbacks go to B, then to A.
        alternating = {(repo, "700", f"alt-{n}") for repo in L2_REPOS for n in range(3)}
        for repo, _, job in sorted(alternating):
            assert (await placed.report(b, repo, delivery, job, "in_progress")).status_code == 200
            assert (await placed.report(a, repo, delivery, job, "completed")).status_code == 200

        # Act 2: identical races over both instances, one effect each.
        raced = [(L2_REPOS[0], "race-l2"), (L4_REPO, "race-l4")]
        for repo, job in raced:
            assert (await placed.report(a, repo, delivery, job, "in_progress")).status_code == 200
            await race(placed, relays, repo, delivery, job)
        l4_name = check_run_name(L4_REPO, "ci", "race-l4")

        async def l4_check_completed() -> bool:
            runs = [r for r in placed.github.check_runs(UPSTREAM) if r["name"] == l4_name]
            return any(r["status"] == "completed" for r in runs)

        await eventually(l4_check_completed, 60, "the L4 check run completed")
        # One check run per transition (SPEC §7: the newest run of a name is the job's
        # state): one in_progress, one completed — not one per racing callback.
        runs = Counter(
            (r["status"], r["conclusion"])
            for r in placed.github.check_runs(UPSTREAM)
            if r["name"] == l4_name
        )
        assert runs == {("in_progress", None): 1, ("completed", "success"): 1}, runs

        # Act 3: a HUD outage, drained by whichever process gets there.
        placed.gate.shut = True
        outage = {(repo, "700", f"outage-{n}") for repo in L2_REPOS for n in range(5)}
        for n, (repo, _, job) in enumerate(sorted(outage)):
            for status in ("in_progress", "completed"):
                answer = await placed.report(relays[n % 2], repo, delivery, job, status)
                assert answer.status_code == 202, answer.text
        placed.gate.shut = False
        settled = alternating | outage | {(repo, "700", job) for repo, job in raced}
        took = await eventually(
            lambda: set(placed.gate.completed()) >= settled, 120, "outage drained"
        )

        # Act 4: zombies, and the leader killed while it times them out.
        zombies = {(repo, "700", f"zombie-{n}") for repo in L2_REPOS for n in range(30)}
        for n, (repo, _, job) in enumerate(sorted(zombies)):
            answer = await placed.report(relays[n % 2], repo, delivery, job, "in_progress")
            assert answer.status_code == 200, answer.text

        def timed_out() -> set[tuple[str, str, str]]:
            return set(placed.gate.completed()) & zombies

        await eventually(lambda: bool(timed_out()), ZOMBIE_TIMEOUT + 90, "a zombie")
        leader = placed.leader()
        assert leader is not None
        leader.kill()
        killed_at = time.monotonic()
        partial = len(timed_out())
        survivors = [c for c in (a, b, sweeper) if c is not leader]
        await eventually(
            lambda: placed.leader() in survivors, 60, "another process leads", every=0.1
        )
        takeover = time.monotonic() - killed_at
        await eventually(lambda: timed_out() == zombies, 120, "every zombie timed out")

        # Each effect once: every job's completed row (zombies: their timed_out row).
        # The one exception is what a SIGKILL makes at-least-once: a body the leader
        # was sending when it died (the HUD took it, its queue item was not yet acked)
        # is sent again by the next leader. The HUD row is an upsert, so its effect is
        # once; the gate sees it twice, once before the kill and once after.
        written = placed.gate.completed()
        resent = {job for job, n in written.items() if n > 1}
        assert written == {**dict.fromkeys(settled | zombies, 1), **dict.fromkeys(resent, 2)}
        assert resent <= zombies and len(resent) <= HUD_PARALLEL, resent
        for job in resent:
            first, again = placed.gate.completed_arrivals(job)
            assert first < killed_at <= again, (job, first, killed_at, again)
        assert Counter(k[3] for k in placed.gate.written)["in_progress"] == len(
            alternating | zombies
        ) + len(raced)  # the outage's in_progress bodies were superseded, not sent

        # Caches shared through the state store: cold lookups once for all processes.
        calls = placed.github.calls
        asked = {
            "installation listings": len(calls("GET", "/app/installations")),
            "per-repo installation lookups": len(calls("GET", "/repos/*/installation")),
            "installation tokens": len(calls("POST", "/app/installations/*/access_tokens")),
            "JWKS fetches": placed.issuer.jwks_requests,
            "allowlist reads": len(calls("GET", f"/repos/{UPSTREAM}/contents/{ALLOWLIST_PATH}")),
        }
        assert asked == {
            "installation listings": 1,
            "per-repo installation lookups": 0,
            "installation tokens": 1,
            "JWKS fetches": 1,
            "allowlist reads": 1,
        }, asked

        record(
            "two instances + sweeper (Redis, PostgreSQL)",
            {
                "outage_drained_after_hud_back_s": took,
                "zombies_timed_out_before_kill": float(partial),
                "new_leader_after_kill_s": takeover,
            },
        )
        print(f"leader killed: {leader.name}; asked {asked}")
        print(json.dumps({"gate_refused": placed.gate.refused}))
