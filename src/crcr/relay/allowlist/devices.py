"""Which device an entry has: an L3 entry's key, an L4 entry's named or derived device.

SPEC §10.2: an L4 entry may name its device (`org4/critical: {device: npu}`); without
one it is the repository's name (`critical`). The device is what a temporarily demoted
L4 backend is label-gated on (`ciflow/crcr/<device>`) and where its demotion pull
request moves it (`L3: <device>:`), so every L4 entry must have a usable one.
"""

from __future__ import annotations

from crcr.relay.allowlist.syntax import device_problem, type_name

_L3, _L4 = 3, 4


def entry_device(
    level: int, repo: str, key: str | None, named: object
) -> tuple[str | None, str | None]:
    """The entry's device and what is wrong with it (None when nothing is).

    `key` is the L3 device key the entry is under (None elsewhere), `named` the value of
    its mapping's `device` field (None when absent).
    """
    if named is not None and not isinstance(named, str):
        return key, f"device must be a string, got {type_name(named)}"
    if level == _L3:
        if named is not None and named != key:
            return key, f"device {named!r} differs from the L3 key {key!r} it is under"
        return key, None
    if level != _L4:
        if named is not None:
            return None, "device is for L3 and L4 entries (it names their label)"
        return None, None
    if named is not None:
        return named, device_problem(named)
    derived = repo.split("/", 1)[1].lower()
    trouble = device_problem(derived)
    if trouble is None:
        return derived, None
    return None, (
        f"without a device, its repository name {derived!r} would be one, but {trouble};"
        f" name one: `{repo}: {{device: NAME}}`"
    )
