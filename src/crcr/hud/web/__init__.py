"""The HUD dashboard: server-rendered pages, server-drawn SVG charts, one small CSS file."""

from crcr.hud.web.routes import pages_router

__all__ = ["pages_router"]
