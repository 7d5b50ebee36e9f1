"""The sandbox: an offline stand-in for GitHub (SPEC §9)."""
