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
    id: str = ""  # stable "experiment/slug", set by the experiment (docs/CLAIMS.md links by it)
    status: str = field(init=False)

    def __post_init__(self):
        if self.supported is not None:
            self.supported = bool(self.supported)
        self.status = {True: SUPPORTED, False: NOT_SUPPORTED, None: NOT_APPLICABLE}[self.supported]


def not_applicable(claim: str, why: str, id: str = "") -> Claim:
    return Claim(claim, None, {"not_applicable": why}, id)


def identified(prefix: str, claims: list[Claim], slugs) -> list[Claim]:
    """The claims, each given the id "prefix/slug" (one slug per claim, in order)."""
    slugs = list(slugs)
    if len(slugs) != len(claims):
        raise ValueError(f"{prefix}: {len(claims)} claims but {len(slugs)} ids {slugs}")
    for claim, slug in zip(claims, slugs):
        claim.id = f"{prefix}/{slug}"
    return claims
