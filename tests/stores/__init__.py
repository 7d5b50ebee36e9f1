"""Tests of the state stores (both backends, one contract)."""
