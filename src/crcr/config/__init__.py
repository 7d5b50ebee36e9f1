"""How a crcr process is configured: settings, secrets, config text, logging."""
