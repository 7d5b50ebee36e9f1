"""Relay health (SPEC §13): the canary's probes, the health document, alerts on transitions."""
