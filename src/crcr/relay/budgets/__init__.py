"""Hardware budgets (SPEC §15): what a backend with a few machines is sent, and when."""
