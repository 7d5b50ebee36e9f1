"""Prometheus metrics of alerts: raised per transition, and their deliveries per sink."""

from __future__ import annotations

from prometheus_client import Counter

ALERTS = Counter(
    "crcr_alerts_total",
    "Alerts raised on a change of state, by kind (backend_state, canary) and new state.",
    ["kind", "to"],
)
ALERT_DELIVERIES = Counter(
    "crcr_alert_deliveries_total",
    "Alert deliveries by sink (webhook, slack, issues) and result (sent, retried, dropped).",
    ["sink", "result"],
)
