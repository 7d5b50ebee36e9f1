"""Culprit finding (SPEC §14): bisect a backend's post-merge break; measure its noise floor."""
