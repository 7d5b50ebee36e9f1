"""The HUD: results ingestion, the results store and the dashboard."""
