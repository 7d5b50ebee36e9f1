"""`crcr init`: scaffolding for the repositories that take part in a relay."""
