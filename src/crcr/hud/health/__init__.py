"""Relay health (SPEC §13): backend states, expected outcomes and the canary's verdict."""
