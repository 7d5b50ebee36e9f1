"""The SPEC §15 settings: how long a merge group waits for a silent L4 backend.

Kept beside `settings.py` (which inherits them) so each stays readable in one sitting;
nothing here reads the environment itself.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class BudgetSettings(BaseSettings):
    """`CRCR_MERGE_QUEUE_DEADLINE` (SPEC §15 "Merge queue")."""

    merge_queue_deadline: float = Field(default=1800, gt=0)
    """Seconds an L4 check run on a merge group waits for a result before it concludes
    `neutral` ("no result in time"), so a silent backend never stalls the queue."""
