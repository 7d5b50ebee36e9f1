"""Fail on a known vulnerability in the installed dependencies; say loudly what was not checked.

pip-audit reads advisories from PyPI's JSON API. A mirror or proxy that does not serve
them (the CI machines here reach PyPI through one) makes every dependency "not found":
`pip-audit` alone would then print "No known vulnerabilities found" and `--strict` would
fail every run for a fault that is not the project's. This step fails on any known
vulnerability, and reports the dependencies it could not audit as a warning naming them.
"""

from __future__ import annotations

import json
import subprocess
import sys


def main() -> int:
    audit = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip_audit",
            "--skip-editable",
            "--progress-spinner",
            "off",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        report = json.loads(audit.stdout)
    except json.JSONDecodeError:
        print(f"audit: pip-audit gave no report:\n{audit.stderr}", file=sys.stderr)
        return 1
    vulnerable = [d for d in report["dependencies"] if d.get("vulns")]
    unchecked = [d["name"] for d in report["dependencies"] if "skip_reason" in d]
    for dependency in vulnerable:
        ids = ", ".join(v["id"] for v in dependency["vulns"])
        print(f"audit: {dependency['name']} {dependency['version']}: {ids}", file=sys.stderr)
    if unchecked:
        print(
            f"audit: warning: no advisory data for {len(unchecked)} of "
            f"{len(report['dependencies'])} dependencies (is PyPI reached through a mirror?): "
            + ", ".join(unchecked),
            file=sys.stderr,
        )
    checked = len(report["dependencies"]) - len(unchecked)
    print(f"audit: {checked} dependencies checked, {len(vulnerable)} with known vulnerabilities")
    return 1 if vulnerable else 0


if __name__ == "__main__":
    sys.exit(main())
