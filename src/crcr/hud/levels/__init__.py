"""Level status (SPEC §10, §10.1): each backend's criteria measured from rollups and judged."""
