"""Run a composite action's steps the way the Actions runner does, for tests.

What the runner does and this copies: input defaults (themselves expressions, like
`${{ github.job }}`) filled in, `${{ <context>.<path> }}` substituted in `env`, `if` and
the action's outputs, each `shell: bash` step run as `bash --noprofile --norc -eo
pipefail <script file>` with a fresh `$GITHUB_OUTPUT` file whose `name=value` lines
become `steps.<id>.outputs`, and the first failing step ending the action. Anything
else in an expression (functions, operators) is refused, so an action that starts
needing more fails here rather than passing untested.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}")
_LOOKUP = re.compile(r"[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*")


@dataclass
class StepRun:
    """One step as it ran."""

    name: str
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str]


@dataclass
class ActionRun:
    """The steps that ran, the action's outputs and whether it succeeded."""

    steps: list[StepRun] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)

    @property
    def succeeded(self) -> bool:
        return all(step.returncode == 0 for step in self.steps)

    @property
    def stdout(self) -> str:
        return "".join(step.stdout for step in self.steps)

    @property
    def log(self) -> str:
        """Everything the steps printed, as the job log shows it."""
        return "".join(step.stdout + step.stderr for step in self.steps)


def _lookup(path: str, contexts: Mapping[str, Any]) -> str:
    value: Any = contexts
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise KeyError(f"${{{{ {path} }}}}: the runner stand-in has no {part!r} here")
        value = value[part]
    if isinstance(value, Mapping):
        raise KeyError(f"${{{{ {path} }}}} is an object, not a value")
    return "" if value is None else str(value)


def substitute(text: str, contexts: Mapping[str, Any]) -> str:
    """Replace every `${{ context.path }}` in `text` by its value."""

    def one(match: re.Match[str]) -> str:
        expression = match.group(1).strip()
        if not _LOOKUP.fullmatch(expression):
            raise ValueError(f"unsupported expression ${{{{ {expression} }}}}")
        return _lookup(expression, contexts)

    return _EXPRESSION.sub(one, text)


def _read_outputs(path: Path) -> dict[str, str]:
    outputs: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        name, equals, value = line.partition("=")
        assert equals, f"$GITHUB_OUTPUT line without '=' (multi-line form unsupported): {line!r}"
        outputs[name] = value
    return outputs


def run_composite(
    action_dir: Path,
    inputs: Mapping[str, str],
    *,
    github: Mapping[str, str],
    job: Mapping[str, str],
    env: Mapping[str, str],
    work: Path,
    timeout: float = 120.0,
) -> ActionRun:
    """Run the action in `action_dir` with `inputs`; `env` is the job's environment."""
    action = yaml.safe_load((action_dir / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    contexts: dict[str, Any] = {
        "github": {**github, "action_path": str(action_dir)},
        "job": dict(job),
        "env": dict(env),
        "steps": {},
    }
    resolved: dict[str, str] = {}
    for name, spec in action.get("inputs", {}).items():
        if name in inputs:
            resolved[name] = inputs[name]
        else:
            assert not spec.get("required"), f"required input {name!r} not given"
            resolved[name] = substitute(str(spec.get("default", "")), contexts)
    unknown = set(inputs) - set(resolved)
    assert not unknown, f"the action has no input {sorted(unknown)}"
    contexts["inputs"] = resolved
    run = ActionRun()
    work.mkdir(parents=True, exist_ok=True)
    for index, step in enumerate(action["runs"]["steps"]):
        assert step.get("shell") == "bash", "only bash steps are emulated"
        assert "if" not in step, "step conditions are not emulated"
        output_file = work / f"step-{index}-output"
        output_file.write_text("")
        script = work / f"step-{index}.sh"
        script.write_text(substitute(step["run"], contexts), encoding="utf-8")
        step_env = {
            **env,
            **{key: substitute(str(value), contexts) for key, value in step.get("env", {}).items()},
            "GITHUB_OUTPUT": str(output_file),
        }
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            env=step_env,
            cwd=github.get("workspace") or None,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        outputs = _read_outputs(output_file)
        run.steps.append(
            StepRun(step.get("name", ""), done.returncode, done.stdout, done.stderr, outputs)
        )
        if "id" in step:
            contexts["steps"][step["id"]] = {"outputs": outputs}
        if done.returncode != 0:
            return run
    run.outputs = {
        name: substitute(str(spec["value"]), contexts)
        for name, spec in action.get("outputs", {}).items()
    }
    return run
