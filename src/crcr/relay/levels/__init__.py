"""Levels that manage themselves (SPEC §10.1): after the HUD has judged, before people merge.

The HUD measures each backend against the level criteria; here the relay acts on its
verdict. `status` reads the verdicts (in-process HUD or over HTTP); `demotion` decides
what a temporary demotion means for a job (pure) and `book` keeps the demotions in
the state store, where `checks/` asks before creating a check run; `allowlist_edit`
moves one entry in the allowlist's text (pure), `proposals` words the pull request, and
`sync` opens, refreshes and closes those pull requests through the GitHub App. The
sweeper's leader runs `refresh` every pass and the sync every
`CRCR_LEVELS_SYNC_INTERVAL`; `cli` (`crcr levels sync`) runs it by hand, and `wiring`
puts the parts together for `crcr.runtime`.
"""
