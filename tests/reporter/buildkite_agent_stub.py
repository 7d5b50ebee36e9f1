"""A stand-in `buildkite-agent` for end-to-end tests: `oidc request-token` and nothing else.

Like the real agent it asks a token service for the job's OIDC token, authenticating
with the job's `BUILDKITE_AGENT_ACCESS_TOKEN` at `BUILDKITE_AGENT_ENDPOINT` (here the
sandbox Buildkite issuer's token endpoint), and prints the token alone on stdout.
Flags the real command does not have are refused, so the reporter's call stays valid.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

FLAGS_WITH_VALUES = ("--audience", "--lifetime", "--claim")


def parse_flags(arguments: list[str]) -> dict[str, str]:
    """`--flag value` pairs (also `--flag=value`), refusing anything else."""
    flags: dict[str, str] = {}
    remaining = list(arguments)
    while remaining:
        flag = remaining.pop(0)
        name, equals, value = flag.partition("=")
        if name not in FLAGS_WITH_VALUES:
            raise ValueError(f"flag provided but not defined: {name}")
        if not equals:
            if not remaining:
                raise ValueError(f"flag needs an argument: {name}")
            value = remaining.pop(0)
        flags[name] = value
    if "--lifetime" in flags and not flags["--lifetime"].isdigit():
        raise ValueError("--lifetime must be a number of seconds")
    return flags


def request_token(audience: str) -> str:
    """Ask the token endpoint for a token with `audience`."""
    endpoint = os.environ["BUILDKITE_AGENT_ENDPOINT"]
    separator = "&" if "?" in endpoint else "?"
    url = f"{endpoint}{separator}audience={urllib.parse.quote(audience, safe='')}"
    request = urllib.request.Request(
        url, headers={"Authorization": f"Bearer {os.environ['BUILDKITE_AGENT_ACCESS_TOKEN']}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        token: str = json.load(response)["value"]
    return token


def main(arguments: list[str]) -> int:
    """Run the command line; exit status 0 with the token on stdout, or 1 with a reason."""
    if arguments[:2] != ["oidc", "request-token"]:
        print(f"fatal: unknown command {' '.join(arguments[:2])!r}", file=sys.stderr)
        return 1
    try:
        flags = parse_flags(arguments[2:])
        token = request_token(flags.get("--audience", "https://buildkite.com"))
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
