"""A job report's identity: what makes two callbacks the same job execution."""

from __future__ import annotations

from tests.hud.hud_bodies import our_body

from crcr.hud.write.ingest import parse_result_body


def test_a_rerun_has_a_different_key_than_its_first_attempt() -> None:
    first = parse_result_body(our_body(run_attempt="1", check_run_id="1"))
    rerun = parse_result_body(our_body(run_attempt="2", check_run_id="2"))
    repeat = parse_result_body(our_body(run_attempt="1", check_run_id="1", status="completed"))

    assert first.job_key != rerun.job_key
    assert first.job_key == repeat.job_key
