"""Logs are JSON lines that carry their context and never a secret-named field."""

import json
import logging
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from crcr.config.log_format import JsonFormatter, timestamp


def record(**extra: object) -> logging.LogRecord:
    entry = logging.makeLogRecord({"msg": "dispatch %s", "args": ("queued",), "levelno": 30})
    entry.levelname = "WARNING"
    entry.name = "crcr.relay.webhook.fanout"
    for name, value in extra.items():
        setattr(entry, name, value)
    return entry


def test_a_record_becomes_one_json_object_with_its_context() -> None:
    line = JsonFormatter().format(record(delivery_id="d-1", repo="org/repo"))
    entry = json.loads(line)
    assert entry["message"] == "dispatch queued"
    assert entry["level"] == "warning"
    assert entry["logger"] == "crcr.relay.webhook.fanout"
    assert entry["delivery_id"] == "d-1"
    assert entry["repo"] == "org/repo"
    assert "\n" not in line


def test_fields_named_like_secrets_are_masked() -> None:
    line = JsonFormatter().format(record(installation_token="ghs_abc", webhook_secret="s3"))
    assert "ghs_abc" not in line
    assert "s3" not in line
    assert json.loads(line)["installation_token"] == "**********"


@given(st.floats(min_value=0, max_value=4_102_444_800, allow_nan=False))
def test_the_time_is_written_as_isoformat_writes_it_to_the_millisecond(created: float) -> None:
    expected = datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")
    assert timestamp(created) == expected
