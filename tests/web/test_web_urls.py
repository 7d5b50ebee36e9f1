"""Links from downstreams: only plain web URLs get through, pinned where GitHub names them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crcr.web.web_urls import (
    checked_url_problem,
    github_web_url,
    is_run_url_of,
    is_web_url,
    web_url_problem,
)

RUN = "https://github.com/org/repo/actions/runs/42"


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JavaScript:alert(document.cookie)",
        " javascript:alert(1)",
        "java\tscript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox(1)",
        "//evil.example/x",
        "https:evil.example",
        "https://user:secret@evil.example/",
        'https://example.org/"onmouseover="alert(1)',
        "https://example.org/\\evil",
        "https:///path-only",
        "ftp://example.org/file",
        "https://example.org/" + "a" * 2000,
    ],
)
def test_anything_but_a_plain_https_url_is_refused(url: str) -> None:
    assert web_url_problem(url) is not None
    assert not is_web_url(url)


@pytest.mark.parametrize(
    "url",
    [RUN, "https://ci.example.org:8443/builds/7?tab=log#L3", "https://[::1]/x"],
)
def test_plain_https_urls_pass(url: str) -> None:
    assert web_url_problem(url) is None


def test_http_passes_only_where_allowed_the_sandbox() -> None:
    assert "https://" in (web_url_problem("http://127.0.0.1:8000/run") or "")
    assert web_url_problem("http://127.0.0.1:8000/run", allow_http=True) is None
    assert web_url_problem("javascript:x", allow_http=True) is not None


@pytest.mark.parametrize(
    ("api", "web"),
    [
        ("https://api.github.com", "https://github.com"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com"),
        ("http://127.0.0.1:9000", "https://github.com"),
    ],
)
def test_the_web_address_follows_the_api_address(api: str, web: str) -> None:
    assert github_web_url(api) == web


@pytest.mark.parametrize(
    ("url", "ours"),
    [
        (RUN, True),
        (RUN + "/attempts/2", True),
        (RUN + "/job/987654", True),
        ("https://github.com/ORG/Repo/actions/runs/42", True),
        ("https://github.com/other/repo/actions/runs/42", False),
        (RUN + "1", False),
        (RUN + "/../../../../other/repo/actions/runs/42", False),
        (RUN + "/attempts/2/../x", False),
        ("https://evil.example/org/repo/actions/runs/42", False),
    ],
)
def test_a_run_url_must_name_the_verified_repo_and_run(url: str, ours: bool) -> None:
    assert is_run_url_of(url, "https://github.com", "org/repo", "42") is ours


_URL_PIECES = st.text(
    alphabet=st.sampled_from(list("hts:/@[]%.-_~?#=&ab0129Z \t\\\"'<>`é\x00\x7f")), max_size=40
)


@settings(max_examples=3000, deadline=None)
@given(
    st.one_of(
        _URL_PIECES,
        st.builds("https://{}".format, _URL_PIECES),
        st.builds("HTTPS://{}".format, _URL_PIECES),
        st.builds("https://example.org{}".format, _URL_PIECES),
        st.builds("http://example.org{}".format, _URL_PIECES),
    ),
    st.booleans(),
)
def test_the_plain_link_shortcut_answers_as_the_full_checks_do(url: str, allow_http: bool) -> None:
    """`web_url_problem` passes the usual link on a pattern before splitting it; whatever
    the link, the answer is the full checks' (their reason too)."""
    full = checked_url_problem(url, allow_http=allow_http)
    assert web_url_problem(url, allow_http=allow_http) == full
