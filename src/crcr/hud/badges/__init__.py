"""Badges (SPEC §13): a backend's level and state as a self-contained SVG for its README."""
