"""reexamine-adam: was "Adam behaves like SignGD: not supported" an artefact of the atlas's
constant learning rate (the ε → 0 theory of Adam's ℓ∞ bias needs a decaying one) or of its
3,000 steps? Adam with η_t = η₀·(t + 1)^(−a) and constant-rate Adam with ε = 0 (the theory's
ε → 0; the atlas's ε = 1e-300 arm runs beside it, judged by no row: it stalls in its ε regime),
over 3·10⁵ steps, against SignGD at the same budget; `constant-rate-explains` and
`short-run-explains` judge the two explanations (experiments/reexamine_atlas.py;
configs/reexamine-adam.toml)."""

from pydantic import Field, model_validator

from ..config import Text
from . import reexamine_atlas
from .reexamine_atlas import run

DESCRIPTION = "Re-examines atlas's Adam verdict: decaying vs constant rate over 3*10^5 steps"


class Config(reexamine_atlas.Config):
    stalled: dict[Text, Text] = Field(
        {},
        description="algorithm → why a stall of its ‖W_t‖ is no outcome of the rows on it, "
        "and what would decide them: such a row (as run or not), and any comparison with the "
        "stalled arm, is inconclusive with the measured stall and this reason",
    )

    def stall_decides_nothing(self) -> dict[str, str]:
        return dict(self.stalled)

    @model_validator(mode="after")
    def _stalled_names_algorithms(self):
        names = [a.name for a in self.algorithms]
        for name in self.stalled:
            if name not in names:
                raise ValueError(f"stalled.{name} is not one of the algorithms {names}")
        return self


__all__ = ["DESCRIPTION", "Config", "run"]
