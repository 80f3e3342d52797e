"""A claim of the seed papers and the verdict a run gives it: supported, not supported, or not
applicable (nothing to compare). Shared by the synthetic and the real-data experiments."""

from __future__ import annotations

from dataclasses import dataclass, field

SUPPORTED, NOT_SUPPORTED, NOT_APPLICABLE = "supported", "not supported", "not applicable"


@dataclass
class Claim:
    """One claim of the seed papers and whether this run supports it, with the numbers.

    supported is None when the run has nothing to compare (one p, one algorithm, a missing
    group): the claim is "not applicable", which is neither support nor refutation."""

    claim: str
    supported: bool | None
    evidence: dict = field(default_factory=dict)
    status: str = field(init=False)

    def __post_init__(self):
        if self.supported is not None:
            self.supported = bool(self.supported)
        self.status = {True: SUPPORTED, False: NOT_SUPPORTED, None: NOT_APPLICABLE}[self.supported]


def not_applicable(claim: str, why: str) -> Claim:
    return Claim(claim, None, {"not_applicable": why})
