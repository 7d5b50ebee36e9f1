"""What the report step costs a downstream job: the action's steps now, and the old install.

Run: `python -m bench.report_step [--jobs 10] [--old]` (from the repository root).

New: the composite action's steps (action/crcr-report/action.yml) run as a runner runs
them (`tests.reporter.composite_runner`, the stand-in the action's tests use) on a
fresh `python3 -m venv --without-pip` interpreter, against the relay and sandbox on
loopback (`tests.reporter.live_stack`: SQLite state, HUD in-process). Each job reports
`in_progress` then `completed`; each step's wall time and CPU time (bash and the
reporter, from RUSAGE_CHILDREN: on a shared machine CPU time is what load does not
inflate) are recorded (median, p90, max), with what the step installed (nothing: the
venv's site-packages stays empty), the interpreter's start-up and the reporter's
imports (CPU), and the reporter's peak RSS.

Old (`--old`): the previous action's first step, cold — a venv and `pip install` of the
checkout of `main` (exported with `git archive`, so nothing is written into a work
tree), with no pip cache — its wall and CPU time and the venv's size on disk; then the
old `crcr report` from that venv against the same relay, per step. Needs the package
index (PyPI or this machine's mirror) and `git`.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.reporter.composite_runner import run_composite
from tests.reporter.live_stack import ACTIONS_REPO, Stack, actions_job, running_stack

ROOT = Path(__file__).parents[1]
ACTION_DIR = ROOT / "action" / "crcr-report"


def children_cpu() -> float:
    """CPU seconds used so far by waited-for child processes (and theirs): load-proof."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def summary(label: str, seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return (
        f"{label:<34} median {statistics.median(ordered) * 1000:7.0f} ms"
        f"  p90 {p90 * 1000:7.0f} ms  max {ordered[-1] * 1000:7.0f} ms  (n={len(ordered)})"
    )


def dispatched_job(stack: Stack, work: Path, number: int, venv: Path) -> dict[str, str]:
    """A job environment for a fresh dispatch, with the bare venv first on PATH."""
    delivery_id = stack.open_pr(number, f"{number:040x}")
    event = {"client_payload": stack.client_payload(ACTIONS_REPO, delivery_id)}
    env = actions_job(
        stack, work, event_name="repository_dispatch", event=event, run_id=str(number)
    )
    for inherited in ("PYTHONPATH", "VIRTUAL_ENV", "CRCR_CALLBACK_URL"):
        env.pop(inherited, None)
    return env | {"PATH": f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"}


def timed_action(
    env: dict[str, str], work: Path, callback: str, **inputs: str
) -> tuple[float, float]:
    """Wall and CPU seconds of one run of the action's steps."""
    cpu = children_cpu()
    started = time.perf_counter()
    run = run_composite(
        ACTION_DIR,
        {"callback-url": callback, **inputs},
        github={"job": env["GITHUB_JOB"], "workspace": str(work)},
        job={"check_run_id": "1"},
        env=env,
        work=work / "steps",
    )
    elapsed = time.perf_counter() - started
    if run.outputs.get("outcome") != "accepted":
        raise SystemExit(f"the action did not deliver: {run.outputs} {run.log}")
    return elapsed, children_cpu() - cpu


def measure_new(stack: Stack, work: Path, jobs: int) -> None:
    venv = work / "bare-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    callback = f"{stack.relay_url}/github/callback"
    walls, cpus = [], []
    for number in range(1, jobs + 1):
        job_dir = work / f"job-{number}"
        job_dir.mkdir()
        env = dispatched_job(stack, job_dir, 1000 + number, venv)
        for inputs in ({"status": "in_progress"}, {"status": "completed", "conclusion": "success"}):
            wall, cpu = timed_action(env, job_dir, callback, **inputs)
            walls.append(wall)
            cpus.append(cpu)
    packages = list(venv.glob("lib/python*/site-packages/*"))
    # VmHWM, not ru_maxrss: a child's ru_maxrss starts at its parent's (this process's).
    probe = (
        "import sys, time; t = time.process_time(); sys.path.insert(0, sys.argv[1]);"
        " import crcr.reporter.standalone; print(time.process_time() - t,"
        " [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])"
    )
    python = str(venv / "bin" / "python")
    bare = [python, "-s", "-c", "pass"]
    startup, imports, rss = [], [], []
    for _ in range(5):
        cpu = children_cpu()
        subprocess.run(bare, check=True)
        startup.append(children_cpu() - cpu)
        out = subprocess.run(
            [python, "-s", "-c", probe, str(ROOT / "src")], check=True, capture_output=True
        ).stdout.split()
        imports.append(float(out[0]))
        rss.append(float(out[1]) / 1024)
    print("new action (runner's python3, nothing installed):")
    print(" ", summary("one report step, wall", walls))
    print(" ", summary("one report step, CPU (bash + python)", cpus))
    print(f"  installed into the interpreter: {len(packages)} packages, 0 MB")
    print(" ", summary("of which: interpreter start-up, CPU", startup))
    print(" ", summary("of which: the reporter's imports, CPU", imports))
    print(f"  reporter's peak RSS after its imports: {statistics.median(rss):.0f} MB")


def du_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def measure_old(stack: Stack, work: Path, jobs: int) -> None:
    source = work / "main-src"
    source.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "main"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
    venv = work / "old-venv"
    cpu = children_cpu()
    clock = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", "--no-cache-dir", str(source)],
        check=True,
        env=os.environ | {"PIP_NO_CACHE_DIR": "1"},
        stderr=subprocess.DEVNULL,  # this machine's pip warns about every mirror miss
    )
    install = time.perf_counter() - clock
    install_cpu = children_cpu() - cpu
    packages = len(list(venv.glob("lib/python*/site-packages/*.dist-info")))
    print("old action, step 1 (venv + pip install of main's checkout, no pip cache):")
    print(f"  wall {install:.1f} s, CPU {install_cpu:.1f} s, {packages} packages,", end=" ")
    print(f"{du_mb(venv):.0f} MB on disk")
    crcr = str(venv / "bin" / "crcr")
    walls, cpus = [], []
    for number in range(1, jobs + 1):
        job_dir = work / f"old-job-{number}"
        job_dir.mkdir()
        env = dispatched_job(stack, job_dir, 2000 + number, venv)
        env["CRCR_CALLBACK_URL"] = f"{stack.relay_url}/github/callback"
        for status in ("in_progress", "completed"):
            extra = ["--conclusion=success"] if status == "completed" else []
            cpu = children_cpu()
            clock = time.perf_counter()
            subprocess.run(
                [crcr, "report", "--provider=github", f"--status={status}", *extra],
                env=env,
                check=True,
                capture_output=True,
            )
            walls.append(time.perf_counter() - clock)
            cpus.append(children_cpu() - cpu)
    print("old action, step 2 (`crcr report` from that venv), per report:")
    print(" ", summary("wall", walls))
    print(" ", summary("CPU", cpus))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=10, help="jobs, each reporting twice")
    parser.add_argument("--old", action="store_true", help="also measure the old install")
    options = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory(prefix="crcr-report-step-") as scratch:
        work = Path(scratch)
        (work / "stack").mkdir()
        with running_stack(work / "stack") as stack:
            measure_new(stack, work, options.jobs)
            if options.old:
                if shutil.which("git") is None:
                    raise SystemExit("--old needs git")
                measure_old(stack, work, options.jobs)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
