"""What a probe job should conclude: its explicit field, else its name (SPEC §13).

The reference's canary names its jobs `xfail`, `xcancel` and `xtimeout` to say "this one
must fail / be cancelled / time out" — the relay's error paths are probed too. crcr's
`workflow.expected_conclusion` says it without a naming convention, and beats the name.
"""

from __future__ import annotations

NAME_MARKERS = (("xfail", "failure"), ("xcancel", "cancelled"), ("xtimeout", "timed_out"))
"""Job-name substrings and the conclusion they expect (the reference's convention)."""


def expected_conclusion(job_name: str, explicit: str | None) -> str:
    """The conclusion a probe job should reach: `explicit`, a name marker's, or success."""
    if explicit:
        return explicit
    lowered = job_name.lower()
    for marker, conclusion in NAME_MARKERS:
        if marker in lowered:
            return conclusion
    return "success"
