"""After an accepted L3/L4 callback: upstream check runs and oncall comments (SPEC §7).

`check_runs` decides what a check run says (pure), `publisher` creates it once per job
transition through a durable queue, `oncall_comments` keeps one PR comment telling the
oncalls of a failing backend.
"""
