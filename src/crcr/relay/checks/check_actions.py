"""The buttons crcr puts on its L3/L4 check runs (SPEC §15), as GitHub's `actions`.

Here, with the check-run body that carries them; `crcr.relay.budgets.buttons` answers
the presses.
"""

from __future__ import annotations

RERUN_FAILED = "rerun-failed"
SNOOZE = "snooze-24h"
SNOOZE_SECONDS = 24 * 3600
SNOOZES = "oncall-snooze"
"""Cache namespace: `<upstream>#<pr>:<repo>` → the epoch second the snooze ends."""

CHECK_RUN_ACTIONS: tuple[dict[str, str], ...] = (
    {
        "label": "Re-run failed",
        "identifier": RERUN_FAILED,
        "description": "Re-run the failed jobs downstream",
    },
    {
        "label": "Snooze 24 h",
        "identifier": SNOOZE,
        "description": "No oncall comment on this PR for 24 h",
    },
)
"""GitHub caps label and identifier at 20 characters and description at 40."""
