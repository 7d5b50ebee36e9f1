"""The SPEC §14 settings: culprit finding (bisection) and the noise floor (A/A runs).

Kept beside `settings.py` (which inherits them) so each stays readable in one sitting;
nothing here reads the environment itself.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class CulpritSettings(BaseSettings):
    """`CRCR_BISECT_PARALLEL`, `CRCR_CULPRIT_COMMENT` and `CRCR_AA_INTERVAL` (SPEC §14)."""

    bisect_parallel: int = Field(default=1, ge=1, le=16)  # crcr_bisect in flight per backend
    culprit_comment: bool = False  # comment on the culprit's merged upstream PR
    aa_interval: float = Field(default=604800, ge=0)  # seconds; 0 = no crcr_aa pairs
