"""Render a downstream workflow template with the relay's URL and the action's reference.

Pure: names in, YAML text out. The templates are valid workflows on their own (linted
with actionlint in the tests), holding the default action reference (`DEFAULT_ACTION`)
and a placeholder callback URL (`PLACEHOLDER_CALLBACK_URL`) that rendering replaces, so
a reader of the package data sees exactly what gets written.
"""

from __future__ import annotations

import re
from importlib import resources

TEMPLATES = ("minimal", "matrix", "build-test", "wheels")
CANCEL_TEMPLATE = "cancel-on-supersede"
"""The companion workflow cancelling a superseded head's runs on `crcr_cancel` (SPEC §15):
written beside the main one, with nothing to render (it reports nothing)."""
HOME_REPOSITORY = "crcr-project/crcr"
"""Where crcr is published; its `v1` tag moves with every compatible release of the action."""
DEFAULT_ACTION = f"{HOME_REPOSITORY}/action/crcr-report@v1"
PLACEHOLDER_CALLBACK_URL = "https://relay.example.org/github/callback"

# `owner/repo[/path]@ref` or a local `./path`: what a step's `uses:` accepts for an
# action. Both values are spliced into YAML, so anything that could end the scalar
# (spaces, quotes, `#`, newlines) is refused rather than escaped.
_ACTION_REF = re.compile(
    r"(?:[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_./-]+)?@[A-Za-z0-9_./-]+"
    r"|\./[A-Za-z0-9_./-]+)"
)
_CALLBACK_URL = re.compile(r"https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:/[A-Za-z0-9_.~%/-]*)?")


class InitError(Exception):
    """`crcr init` cannot do what was asked; the message is the one line to print."""


def check_template(name: str) -> str:
    """The template's name, if crcr ships one by that name."""
    if name not in TEMPLATES:
        raise InitError(f"--template must be one of {', '.join(TEMPLATES)}, got {name!r}")
    return name


def check_action(ref: str) -> str:
    """An action reference usable in `uses:` (e.g. `my-org/crcr/action/crcr-report@v1`)."""
    if not _ACTION_REF.fullmatch(ref):
        raise InitError(f"--action must look like owner/repo/path@ref or ./path, got {ref!r}")
    return ref


def check_callback_url(url: str) -> str:
    """The relay's callback URL: plain http(s), nothing that could break the YAML."""
    if not _CALLBACK_URL.fullmatch(url):
        raise InitError(
            f"--callback-url must be an http(s) URL such as {PLACEHOLDER_CALLBACK_URL}, got {url!r}"
        )
    return url


def template_text(name: str) -> str:
    """The template as shipped, placeholders included."""
    package = resources.files("crcr.init.templates")
    known = name if name == CANCEL_TEMPLATE else check_template(name)
    return package.joinpath(f"{known}.yml").read_text(encoding="utf-8")


def render_workflow(name: str, *, action: str, callback_url: str) -> str:
    """The workflow file `crcr init downstream` writes."""
    text = template_text(name)
    text = text.replace(f"uses: {DEFAULT_ACTION}", f"uses: {check_action(action)}")
    return text.replace(PLACEHOLDER_CALLBACK_URL, check_callback_url(callback_url))


def placeholders_left(callback_url: str) -> list[str]:
    """What the user still has to edit in the written file, as advice lines."""
    if callback_url == PLACEHOLDER_CALLBACK_URL:
        return [
            "set CRCR_CALLBACK_URL to your relay's /github/callback URL (or pass --callback-url)"
        ]
    return []
