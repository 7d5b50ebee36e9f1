"""The demo's fictional downstream backends: their levels, devices and simulated workflows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from crcr.sandbox.simulated_ci_model import Duration, JobSpec, OutcomeRates, WorkflowSpec

DEMO_UPSTREAM = "crcr-demo/pytorch"
"""A made-up upstream, so that links on the dashboard never point at real pull requests."""

DEGRADING_BACKEND = "lumen-ai/mlu-torch"
"""The backend whose failure rate rises during the demo, until it is temporarily demoted.

The others' outcome rates keep them inside the level criteria (SPEC §10): fewer than
1 % of their L3/L4 jobs hang, and at least 90 % pass."""

_MINUTE = 60.0


@dataclass(frozen=True)
class DemoBackend:
    """One downstream repository in the demo allowlist."""

    repo: str
    level: str
    workflow: WorkflowSpec
    device: str | None = None
    oncalls: tuple[str, ...] = ()


def _minutes(median: float, sigma: float = 0.35) -> Duration:
    return Duration.lognormal(median * _MINUTE, sigma)


# Failed tests are named the way pytest's JUnit report names them (module.Class.test).
OP_TESTS = (
    "test_ops.TestCommon.test_out_add",
    "test_ops.TestCommon.test_noncontiguous_samples_matmul",
    "test_nn.TestNN.test_conv2d_padding_same",
    "test_torch.TestTorch.test_index_put_accumulate",
    "test_autograd.TestAutograd.test_grad_mode_restored",
    "test_linalg.TestLinalg.test_svd_lowrank",
)
HELIX_BROKEN = ("test_fft.TestFFT.test_rfft_odd_length",)
"""Fails on every helix run, on the upstream's main branch too: "already failing"."""


DEMO_BACKENDS: tuple[DemoBackend, ...] = (
    DemoBackend(
        "tessera-labs/tpu-bridge",
        "L1",
        WorkflowSpec("tpu-smoke", jobs=(JobSpec("smoke", _minutes(3)),)),
    ),
    DemoBackend(
        "openvec/riscv-vector",
        "L1",
        WorkflowSpec(
            "rvv-build",
            jobs=(JobSpec("build", _minutes(6)), JobSpec("test", _minutes(9), tests=300)),
            outcomes=OutcomeRates(failure=0.1),
        ),
    ),
    DemoBackend(
        "quanta-compute/qpu-torch",
        "L2",
        WorkflowSpec(
            "qpu-ci",
            jobs=(
                JobSpec("lint", Duration.uniform(1 * _MINUTE, 2 * _MINUTE)),
                JobSpec(
                    "test", _minutes(8), matrix=("1, 2", "2, 2"), tests=450, test_names=OP_TESTS
                ),
            ),
            outcomes=OutcomeRates(failure=0.05, flaky=0.05),
            queue_delay=Duration.uniform(10, 90),
        ),
    ),
    DemoBackend(
        "helix-silicon/helix-backend",
        "L2",
        WorkflowSpec(
            "helix",
            jobs=(
                JobSpec("build", _minutes(5)),
                JobSpec("test", _minutes(12, 0.5), tests=1200, broken_tests=HELIX_BROKEN),
            ),
            outcomes=OutcomeRates(failure=0.15, flaky=0.05, hang=0.02),
            queue_delay=Duration.uniform(30, 240),
        ),
    ),
    DemoBackend(
        "northwind/xpu-backend",
        "L3",
        WorkflowSpec(
            "xpu-ci",
            jobs=(
                JobSpec("build", _minutes(6)),
                JobSpec(
                    "test",
                    _minutes(10),
                    matrix=("1, 3", "2, 3", "3, 3"),
                    tests=800,
                    test_names=OP_TESTS,
                ),
            ),
            outcomes=OutcomeRates(failure=0.02, flaky=0.03, hang=0.004),
            queue_delay=Duration.uniform(10, 120),
            triage=True,
        ),
        device="xpu",
        oncalls=("ada-northwind", "lin-northwind"),
    ),
    DemoBackend(
        "lumen-ai/mlu-torch",
        "L3",
        WorkflowSpec(
            "mlu-ci",
            jobs=(
                JobSpec("build", _minutes(4)),
                JobSpec(
                    "test",
                    _minutes(9),
                    tests=600,
                    outcomes=OutcomeRates(flaky=0.05),
                    test_names=OP_TESTS,
                ),
            ),
            outcomes=OutcomeRates(failure=0.03),
            queue_delay=Duration.uniform(5, 60),
        ),
        device="mlu",
        oncalls=("mei-lumen",),
    ),
    DemoBackend(
        "contoso/cuda-extras",
        "L4",
        WorkflowSpec(
            "cuda-extras",
            jobs=(
                JobSpec("lint", Duration.uniform(1 * _MINUTE, 2 * _MINUTE)),
                JobSpec(
                    "test", _minutes(7), matrix=("sm80", "sm90"), tests=950, test_names=OP_TESTS
                ),
            ),
            outcomes=OutcomeRates(failure=0.02, flaky=0.02),
            triage=True,
            queue_delay=Duration.uniform(5, 45),
        ),
        oncalls=("sam-contoso", "kit-contoso"),
    ),
    DemoBackend(
        "fabrikam/metal-ci",
        "L4",
        WorkflowSpec(
            "metal",
            jobs=(JobSpec("test", _minutes(6), tests=500),),
            outcomes=OutcomeRates(failure=0.03, hang=0.002),
            queue_delay=Duration.uniform(5, 30),
        ),
        oncalls=("ray-fabrikam",),
    ),
)


def degraded(workflow: WorkflowSpec, failure: float = 0.8) -> WorkflowSpec:
    """The same workflow failing far more often (a regression landed downstream)."""
    jobs = tuple(replace(job, outcomes=None) for job in workflow.jobs)
    return replace(workflow, jobs=jobs, outcomes=OutcomeRates(failure=failure))


def devices(backends: Sequence[DemoBackend] = DEMO_BACKENDS) -> list[str]:
    """The `ciflow/crcr/<device>` devices the L3 backends answer to."""
    return sorted({b.device for b in backends if b.device})


def allowlist_yaml(backends: Sequence[DemoBackend] = DEMO_BACKENDS) -> str:
    """The allowlist file (SPEC §3) naming every backend at its level."""
    lines = ["# The crcr demo's fictional downstream backends (written by `crcr demo`).\n"]
    for level in ("L1", "L2", "L3", "L4"):
        members = [b for b in backends if b.level == level]
        if not members:
            continue
        lines.append(f"{level}:\n")
        if level == "L3":
            for device in sorted({b.device or "" for b in members}):
                lines.append(f"  {device}:\n")
                for backend in (b for b in members if (b.device or "") == device):
                    lines.append(f"    {backend.repo}: [{', '.join(backend.oncalls)}]\n")
        elif level == "L4":
            lines.extend(f"  - {b.repo}: {', '.join(b.oncalls)}\n" for b in members)
        else:
            lines.extend(f"  - {b.repo}\n" for b in members)
    return "".join(lines)


def workflows(backends: Sequence[DemoBackend] = DEMO_BACKENDS) -> dict[str, WorkflowSpec]:
    """Each backend's simulated workflow, by repository."""
    return {b.repo: b.workflow for b in backends}
