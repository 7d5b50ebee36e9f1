"""`crcr doctor OWNER/REPO` (SPEC §12): where one downstream backend stands.

`github_app` asks GitHub what only the App can answer (installed on the repo? the App's
slug for its install link); `checks` turns the allowlist, that and the audit trail into
one answered check per line with the next step for the first failing one; `cli` prints
them.
"""
