"""In the background: finalise jobs that never completed and drain the retry queues.

Queue owners hand it handlers (`jobs.queue_handler`); `overdue` times out zombies and
redoes lost completions, through the typed job (`jobs.job`); `drain` hands queued items
to their handlers with backoff; `pass_limit` bounds one pass; `leadership` keeps the
short leader lock that the overdue jobs and level syncs need (the queues need none);
`sweeper` runs the passes in a loop (`crcr sweep` is `cli.sweep`).
"""
