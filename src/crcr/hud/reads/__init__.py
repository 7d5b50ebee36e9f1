"""SQL behind each HUD view; `crcr.hud.queries.HudQueries` is the public entry point."""
