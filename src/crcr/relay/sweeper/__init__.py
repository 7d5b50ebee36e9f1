"""In the background: finalise jobs that never completed and drain the retry queues.

`handlers` is what a queue's owner gives the sweeper; `overdue` times out zombies and
redoes lost completions; `drain` hands queued items to their handlers with backoff;
`pass_limit` bounds one pass; `sweeper` runs the passes under the leader lock, in a
loop; `cli` is `crcr sweep`.
"""
