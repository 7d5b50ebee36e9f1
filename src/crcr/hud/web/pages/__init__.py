"""The dashboard's pages, one module each, registered in order by `crcr.hud.web.routes`."""
