"""Baseline verdicts (SPEC §11): did this pull request break a backend, or was it already broken?

Computed by the HUD from results it already holds, with no downstream input: each failed
job of a pull request is compared with the same job's latest push result on the upstream
default branch (`verdicts`, pure) read from the results store (`reader`).
"""
