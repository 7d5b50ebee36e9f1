"""Settings given as JSON text or as the path of a JSON or YAML file (SPEC §2).

`CRCR_OIDC_ISSUERS` and `CRCR_LEVEL_CRITERIA` take either form; the errors are the
settings' own (a `ValueError` that the settings loader prefixes with the variable).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def load_json_or_file(value: str, *, parse_float: Callable[[str], Any] = float) -> Any:
    """The data a setting holds inline as JSON, or in the JSON/YAML file it names."""
    text = value.strip()
    if not text.startswith(("[", "{")):
        path = Path(text)
        if not path.is_file():
            raise ValueError(f"is neither JSON nor a readable file: {text!r}")
        text = path.read_text()
        if path.suffix in (".yaml", ".yml"):
            import yaml

            try:
                return yaml.safe_load(text)
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" at line {mark.line + 1}" if mark is not None else ""
                raise ValueError(f"{path} is not valid YAML{where}") from None
    try:
        return json.loads(text, parse_float=parse_float)
    except json.JSONDecodeError as exc:
        raise ValueError(f"is not valid JSON ({exc.msg})") from exc
