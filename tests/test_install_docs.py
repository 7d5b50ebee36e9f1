"""The docs install crcr only in ways that work: no index serves it (issue 33, item 10)."""

from __future__ import annotations

import re
import subprocess
import tomllib
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, make_url, text

from crcr.hud.db import create_results_engine, migrate

ROOT = Path(__file__).parents[1]
GUIDE = ROOT / "docs" / "operator-guide.md"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "action").rglob("*.md")),
    *sorted((ROOT / "deploy").rglob("*")),
]
# `pip install` naming crcr as an index would serve it: `crcr`, `'crcr[postgres]'`, …
FROM_AN_INDEX = re.compile(
    r"pip install (?:-{1,2}\S+(?: [^-\s']\S*)? )*['\"]?crcr(?:\[\w+\])?(?!\s*@)['\"]?(?=[\s`;)]|$)"
)


@pytest.mark.parametrize("page", [p for p in PAGES if p.is_file()], ids=lambda p: p.name)
def test_no_page_installs_crcr_from_an_index(page: Path) -> None:
    text_ = page.read_text(errors="replace").replace("\n", " ")
    assert FROM_AN_INDEX.findall(text_) == []


def test_the_check_catches_an_install_by_name() -> None:
    for line in ("pip install crcr", "pip install -c constraints.txt 'crcr[postgres]'"):
        assert FROM_AN_INDEX.search(line), line
    for line in ("pip install './crcr[postgres]'", "pip install 'crcr @ git+https://x/y@v1'"):
        assert not FROM_AN_INDEX.search(line), line


def test_the_wheel_the_guide_names_is_the_one_make_dist_builds() -> None:
    planned = subprocess.run(
        ["make", "--dry-run", "--always-make", "dist"], cwd=ROOT, capture_output=True,
        text=True, check=True,
    ).stdout  # fmt: skip
    assert "pip wheel --quiet --no-deps --wheel-dir dist ." in planned
    named = set(re.findall(r"dist/crcr-([\w.]+)-py3-none-any\.whl", GUIDE.read_text()))
    assert named == {VERSION}


def guide_sql() -> list[str]:
    [block] = re.findall(r"^```sql\n(.*?)^```", GUIDE.read_text(), re.MULTILINE | re.DOTALL)
    return [statement.strip() for statement in block.split(";") if statement.strip()]


@pytest.mark.postgres
def test_the_guides_role_and_database_take_the_migrations(postgres_url: str) -> None:
    name = f"crcr_doc_{uuid.uuid4().hex[:8]}"
    statements = [re.sub(r"\bcrcr\b", name, statement) for statement in guide_sql()]
    assert [s.split()[:2] for s in statements] == [["CREATE", "ROLE"], ["CREATE", "DATABASE"]]
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            for statement in statements:
                connection.execute(text(statement))
        url = make_url(postgres_url).set(username=name, password="change-me", database=name)
        engine = create_results_engine(url.render_as_string(hide_password=False))
        try:
            migrate(engine)
            tables = inspect(engine).get_table_names()
        finally:
            engine.dispose()
        assert "alembic_version" in tables and len(tables) > 3
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            connection.execute(text(f'DROP ROLE IF EXISTS "{name}"'))
        admin.dispose()
