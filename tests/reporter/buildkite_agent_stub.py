"""A stand-in `buildkite-agent` for end-to-end tests: `oidc request-token` and nothing else.

Like the real agent it asks the agent API for the job's OIDC token, posting the audience,
the lifetime and the optional claims named with `--claim` to
`$BUILDKITE_AGENT_ENDPOINT/jobs/$BUILDKITE_JOB_ID/oidc/tokens` with the job's
`BUILDKITE_AGENT_ACCESS_TOKEN`, and prints the token alone on stdout. Buildkite adds
`organization_id` and `pipeline_id` to the token only when they are asked for.

Flags the real command does not have are refused, so the reporter's call stays valid;
with `STUB_AGENT_WITHOUT_CLAIM_FLAG=1` it plays an agent too old to know `--claim`.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

FLAGS_WITH_VALUES = ("--audience", "--lifetime", "--claim")


def known_flags() -> tuple[str, ...]:
    if os.environ.get("STUB_AGENT_WITHOUT_CLAIM_FLAG") == "1":
        return tuple(flag for flag in FLAGS_WITH_VALUES if flag != "--claim")
    return FLAGS_WITH_VALUES


def parse_flags(arguments: list[str]) -> dict[str, str]:
    """`--flag value` pairs (also `--flag=value`), refusing anything else."""
    flags: dict[str, str] = {}
    remaining = list(arguments)
    while remaining:
        flag = remaining.pop(0)
        name, equals, value = flag.partition("=")
        if name not in known_flags():
            raise ValueError(f"flag provided but not defined: {name}")
        if not equals:
            if not remaining:
                raise ValueError(f"flag needs an argument: {name}")
            value = remaining.pop(0)
        flags[name] = value
    if "--lifetime" in flags and not flags["--lifetime"].isdigit():
        raise ValueError("--lifetime must be a number of seconds")
    return flags


def request_token(flags: dict[str, str]) -> str:
    """Ask the agent API for the job's token, with the optional claims `--claim` names."""
    endpoint = os.environ["BUILDKITE_AGENT_ENDPOINT"].rstrip("/")
    job = urllib.parse.quote(os.environ["BUILDKITE_JOB_ID"], safe="")
    body: dict[str, object] = {
        "audience": flags.get("--audience", ""),
        "lifetime": int(flags.get("--lifetime", "0")),
        "claims": [claim.strip() for claim in flags.get("--claim", "").split(",") if claim],
    }
    request = urllib.request.Request(
        f"{endpoint}/jobs/{job}/oidc/tokens",
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Authorization": f"Token {os.environ['BUILDKITE_AGENT_ACCESS_TOKEN']}",
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        token: str = json.load(response)["token"]
    return token


def main(arguments: list[str]) -> int:
    """Run the command line; exit status 0 with the token on stdout, or 1 with a reason."""
    if arguments[:2] != ["oidc", "request-token"]:
        print(f"fatal: unknown command {' '.join(arguments[:2])!r}", file=sys.stderr)
        return 1
    try:
        token = request_token(parse_flags(arguments[2:]))
    except ValueError as exc:
        print(f"fatal: {exc}", file=sys.stderr)
        return 1
    except urllib.error.HTTPError as exc:
        print(f"fatal: failed to get OIDC token: HTTP {exc.code}", file=sys.stderr)
        return 1
    print(token)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
