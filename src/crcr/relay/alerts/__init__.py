"""Alerts on transitions (SPEC §13): one per change of state, through the retry queue."""
