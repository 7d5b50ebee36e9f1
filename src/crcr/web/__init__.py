"""The HTTP edge shared by the relay and the HUD: bodies, errors, headers, logs, docs."""
