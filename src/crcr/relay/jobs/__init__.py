"""The job core that `callback/`, `sweeper/` and `checks/` build on, and that none of them owns.

`lifecycle` is the state machine (`JobState`, `job_store_key`, the transition table);
`dispatch` the dispatch record a job is bound to; `job` the typed job record (`Job`)
and the writes that move it; `expectation` the job state a queued HUD body stands
for; `events` what hooks are handed when a job moves (`JobTransitioned`);
`queue_handler` what a retry queue's owner gives the sweeper. Pure values: the store
and the HUD are reached by the packages above.
"""
