"""In the background: finalise jobs that never completed and drain the retry queues.

`handlers` is what a queue's owner gives the sweeper; `overdue` times out zombies and
redoes lost completions; `drain` hands queued items to their handlers with backoff;
`pass_limit` bounds one pass; `leadership` keeps the short leader lock that the overdue
jobs and level syncs need (the queues need none); `sweeper` runs the passes in a loop;
`cli` is `crcr sweep` (`--loop`).
"""
