"""Failure detail a downstream reports (SPEC §11): failed tests and triage verdicts, bounded.

Pure functions shared by the relay (which sanitises before forwarding) and the HUD (which
re-validates what it is given, since a body may come from another relay).
"""
