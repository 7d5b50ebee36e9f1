"""Step 0 of every path: the allowlist of downstream repositories and their levels (SPEC §3).

`syntax` reads the YAML strictly, `model` validates it into an `Allowlist`, `location`
says where `CRCR_ALLOWLIST` points, `source` keeps the allowlist in force fresh and
shared across instances (and follows its version stamp), `revocation` says which pushes
change it; `cli` is `crcr allowlist check` and `crcr allowlist reload`.
"""
