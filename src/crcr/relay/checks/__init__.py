"""After an accepted callback: upstream check runs, oncall comments, confirmations (SPEC §7, §11).

`check_runs` decides what a check run says (pure) and `notes` what it adds (failed tests,
baseline, HUD link, the L4 flake re-run, GitHub contradicting the job); `publisher`
creates it once per job transition through a durable queue, asking `flake_rerun` for the
L4 re-run; `open_checks` keeps every check run left in progress until one of its name
concludes it, whatever levels change (SPEC §10.2), and `check_watch` concludes those a
job left open when the sweeper finds their watch due; `oncall_comments` keeps one PR
comment telling the oncalls of a failing backend, current as its jobs end; `confirmer`
asks GitHub how an Actions job really ended (`confirmation`, pure).
"""
