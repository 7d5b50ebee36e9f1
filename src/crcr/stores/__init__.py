"""Shared stores: the relay's state store (Redis or SQLite)."""
