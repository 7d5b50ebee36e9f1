"""A simulated canary downstream (SPEC §13): it answers every dispatch with probe jobs.

A canary's jobs test the relay, not the upstream: one job that must pass and one named
`xfail` that must fail (the reference's convention), so a Healthy verdict proves the
relay's error path too. Unlike an ordinary simulated backend it answers *every*
dispatch — `crcr_probe`s, and a closed pull request's dispatch as well — and a closed
pull request never cancels its runs: each dispatch is a probe the health page waits for,
and a probe left unanswered or cancelled would read as the relay's fault.
"""

from __future__ import annotations

from crcr.sandbox.github_model import Dispatch
from crcr.sandbox.simulated_ci import SimulatedCI
from crcr.sandbox.simulated_ci_model import Duration, JobSpec, OutcomeRates, WorkflowSpec

PROBE_WORKFLOW = "crcr-probes"
CANARY_WORKFLOW = WorkflowSpec(
    PROBE_WORKFLOW,
    jobs=(
        JobSpec("probe", Duration.uniform(10.0, 30.0)),
        JobSpec("probe-xfail", Duration.uniform(10.0, 30.0), outcomes=OutcomeRates(failure=1.0)),
    ),
)
"""The canary's probe jobs: `probe` passes, `probe-xfail` fails as it should."""
ANSWERED_AS = "crcr_probe"
"""How the canary's runs see every dispatch: as a probe, never as a PR to cancel."""


class CanaryCI(SimulatedCI):
    """Simulated CI for canaries: every dispatch starts the probe jobs, none is cancelled."""

    def _handle_dispatch(self, dispatch: Dispatch) -> None:
        # The client payload (what the jobs echo back) is unchanged; only the run's own
        # view of the event is a probe's, so a closed PR neither skips nor cancels it.
        probe = Dispatch(dispatch.repo, ANSWERED_AS, dispatch.client_payload, dispatch.timestamp)
        super()._handle_dispatch(probe)
