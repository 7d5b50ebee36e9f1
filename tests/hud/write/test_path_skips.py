"""A path-skips notice (SPEC §15): validated field by field, each (head, backend) kept once."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Engine

from crcr.hud.write.path_skips import (
    parse_path_skips,
    record_path_skips,
    skipped_heads,
)
from crcr.relay.budgets.skip_notice import path_skips_url
from crcr.web.refusal import Invalid

NOTICE = {
    "upstream_repo": "pytorch/pytorch",
    "pr_number": 9,
    "head_sha": "d0c5" * 10,
    "delivery_id": "d-1",
    "skipped": ["org/xpu-backend"],
}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"pr_number": 0}, "pr_number"),
        ({"pr_number": True}, "pr_number"),
        ({"head_sha": "not a sha"}, "head_sha"),
        ({"upstream_repo": "pytorch"}, "upstream_repo"),
        ({"skipped": "org/x"}, "skipped"),
        ({"skipped": ["no-slash"]}, "skipped"),
        ({"delivery_id": ""}, "delivery_id"),
    ],
)
def test_a_bad_notice_is_refused_naming_its_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(Invalid, match=field):
        parse_path_skips({**NOTICE, **change})


def test_each_head_and_backend_is_kept_once(engine: Engine) -> None:
    skips = parse_path_skips(NOTICE)
    now = datetime(2026, 11, 28, tzinfo=UTC)

    assert record_path_skips(engine, skips, now) == 1
    assert record_path_skips(engine, skips, now) == 0  # a redelivery
    assert skipped_heads(engine, 9) == [("org/xpu-backend", "d0c5" * 10)]
    assert skipped_heads(engine, 10) == []


def test_the_notice_goes_beside_the_results_route() -> None:
    assert path_skips_url("https://hud.example/api/crcr/results") == (
        "https://hud.example/api/crcr/path-skips"
    )
    assert path_skips_url("https://hud.example/api/crcr/results/") == (
        "https://hud.example/api/crcr/path-skips"
    )
