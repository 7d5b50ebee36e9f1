"""One `crcr report` run, from its inputs to an exit code: what both of its front ends share.

`crcr report` (Typer, in the installed package) and `python3 -m crcr.reporter` (argparse,
what the composite action runs from its checkout with the runner's python3) parse their
options differently and then call `run_report`, so the two cannot drift apart.

Exit codes: 0 delivered (or dry run), 1 the relay refused it or it could not be
delivered, 2 the command was used wrongly (a bad option or missing CI variable).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, TextIO

from crcr.reporter.body import ReportError
from crcr.reporter.post import REQUEST_TIMEOUT, CallbackRefused, CallbackUndelivered
from crcr.reporter.report import ReportInputs, check_callback_url, deliver_report, prepare_report
from crcr.reporter.retry import RetryPolicy
from crcr.reporter.token import DEFAULT_AUDIENCE, TokenError
from crcr.reporter.transport import Send, UrllibSend

EXIT_DELIVERED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


@dataclass(frozen=True)
class ReportResult:
    """How a run ended: exit code, `outcome` word and HTTP status (the action's outputs).

    `outcome` is the relay's verdict when it took the report (`accepted`, `queued`,
    `duplicate`, `ignored`), else `refused` (4xx), `failed` (every retry failed, or no
    token), `invalid` (a wrong input) or `dry-run`. `configuration_fault` marks the
    failures only the downstream can fix (a 4xx, a wrong input, no `id-token: write`).
    """

    exit_code: int
    outcome: str
    http_status: int | None = None
    message: str = ""
    configuration_fault: bool = False


@dataclass(frozen=True)
class Delivery:
    """Where and how to send: callback URL, token audience, per-phase timeout, attempts."""

    callback_url: str = ""
    audience: str = DEFAULT_AUDIENCE
    timeout: float = REQUEST_TIMEOUT
    attempts: int = RetryPolicy.attempts
    dry_run: bool = False


def _warn_on_stderr(message: str) -> None:
    print(f"crcr report: warning: {message}", file=sys.stderr)


async def _deliver(
    inputs: ReportInputs,
    env: Mapping[str, str],
    delivery: Delivery,
    send: Send,
    out: TextIO,
    warn: Callable[[str], None],
) -> ReportResult:
    try:
        prepared = prepare_report(inputs, env, now=datetime.now(timezone.utc))
        url = "" if delivery.dry_run else check_callback_url(delivery.callback_url)
    except ReportError as exc:
        return ReportResult(EXIT_USAGE, "invalid", None, str(exc), configuration_fault=True)
    for warning in prepared.warnings:
        warn(warning)
    if delivery.dry_run:
        print(json.dumps(prepared.body, indent=2), file=out)
        return ReportResult(EXIT_DELIVERED, "dry-run")
    try:
        outcome = await deliver_report(
            prepared,
            env,
            callback_url=url,
            audience=delivery.audience,
            send=send,
            policy=RetryPolicy(attempts=delivery.attempts),
        )
    except CallbackRefused as exc:
        return ReportResult(EXIT_FAILED, "refused", exc.status_code, str(exc), True)
    except CallbackUndelivered as exc:
        return ReportResult(EXIT_FAILED, "failed", exc.status_code, str(exc))
    except TokenError as exc:
        return ReportResult(EXIT_FAILED, "failed", None, str(exc), not exc.transient)
    print(outcome.describe(), file=out)
    return ReportResult(EXIT_DELIVERED, outcome.verdict, outcome.status_code)


def run_report(
    inputs: ReportInputs,
    env: Mapping[str, str],
    delivery: Delivery,
    *,
    send: Send | None = None,
    out: TextIO | None = None,
    warn: Callable[[str], None] = _warn_on_stderr,
) -> ReportResult:
    """Build, sign and send one report; say how it went (nothing is raised for a failure).

    The relay's verdict line goes to `out` (stdout) and what was left out of the body to
    `warn`; failures are left to the caller to print, since the action turns them into
    annotations and the CLI into stderr lines.
    """
    chosen = send if send is not None else UrllibSend(delivery.timeout)
    return asyncio.run(_deliver(inputs, env, delivery, chosen, out or sys.stdout, warn))
