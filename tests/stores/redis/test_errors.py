"""Which error replies mean "Redis is unavailable for now" and which stay loud errors.

The replies are those Redis 7 sends, parsed off the wire by hiredis into the exceptions
redis-py makes of them, as on the store's own connections.
"""

from __future__ import annotations

import hiredis
import pytest
from redis._parsers.hiredis import _AsyncHiredisParser
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from crcr.stores.redis.errors import is_unavailable, raise_failed
from crcr.stores.state import StateStoreUnavailable

SCRIPT = "script: 03c387736bb5cc009ff35151572cee04677aa374, on @user_script:1."


def parsed(reply: str) -> Exception:
    """The exception redis-py's hiredis parser makes of the error reply `-<reply>`."""
    reader = hiredis.Reader(replyError=_AsyncHiredisParser.parse_error)
    reader.feed(f"-{reply}\r\n".encode())
    error = reader.gets()
    assert isinstance(error, Exception)
    return error


@pytest.mark.parametrize(
    "reply",
    [
        # A failover made the server we write to a replica (also from inside a script).
        "READONLY You can't write against a read only replica.",
        f"READONLY You can't write against a read only replica. {SCRIPT}",
        # A restarted server still reading its dataset.
        "LOADING Redis is loading the dataset in memory",
        # maxmemory reached with nothing to evict.
        "OOM command not allowed when used memory > 'maxmemory'.",
        f"OOM command not allowed when used memory > 'maxmemory'. {SCRIPT}",
        # A replica that lost its primary and may not serve stale data.
        "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
        # Redis Cluster in the middle of a failover or a resharding.
        "CLUSTERDOWN The cluster is down",
        "CLUSTERDOWN Hash slot not served",
        "TRYAGAIN Multiple keys request during rehashing of slot",
    ],
)
def test_refusals_that_end_with_a_failover_or_a_restart_mean_unavailable(reply: str) -> None:
    error = parsed(reply)
    assert is_unavailable(error)
    with pytest.raises(StateStoreUnavailable, match=type(error).__name__) as raised:
        raise_failed(["OK", error])
    assert raised.value.__cause__ is error


@pytest.mark.parametrize(
    "reply",
    [
        # Bugs in a script or in what the store sends.
        f"ERR user_script:1: Script attempted to access nonexistent global variable 'x' {SCRIPT}",
        f"ERR Wrong number of args calling Redis command from script {SCRIPT}",
        f"WRONGTYPE Operation against a key holding the wrong kind of value {SCRIPT}",
        "CROSSSLOT Keys in request don't hash to the same slot",
        # A misconfigured account.
        "NOPERM this user has no permissions to run the 'evalsha' command",
        # Handled where it occurs: the store loads the script and sends it again.
        "NOSCRIPT No matching script. Please use EVAL.",
    ],
)
def test_other_error_replies_stay_loud(reply: str) -> None:
    error = parsed(reply)
    assert isinstance(error, ResponseError)
    assert not is_unavailable(error)
    with pytest.raises(type(error)) as raised:
        raise_failed(["OK", error])
    assert raised.value is error


def test_lost_connections_and_timeouts_mean_unavailable() -> None:
    assert is_unavailable(RedisConnectionError("Connection reset by peer"))
    assert is_unavailable(TimeoutError())  # the command batcher's round trip timed out
    assert is_unavailable(ConnectionRefusedError(111, "Connection refused"))


def test_replies_without_errors_pass() -> None:
    raise_failed(["OK", 1, None, ["a", "b"]])
