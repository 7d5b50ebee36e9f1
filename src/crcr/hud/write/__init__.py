"""The HUD's write path: a report ingested, merged and written with its rollups."""
