"""reexamine-adam: was "Adam behaves like SignGD: not supported" an artefact of the atlas's
constant learning rate (the ε → 0 theory of Adam's ℓ∞ bias needs a decaying one) or of its
3,000 steps? Adam with η_t = η₀·(t + 1)^(−a) and the atlas's constant-rate Adam, both over
10⁵ steps, against SignGD at the same budget; `constant-rate-explains` and `short-run-explains`
judge the two explanations (experiments/reexamine_atlas.py; configs/reexamine-adam.toml)."""

from .reexamine_atlas import Config, run

DESCRIPTION = "Re-examines atlas's Adam verdict: decaying vs constant rate over 10^5 steps"

__all__ = ["DESCRIPTION", "Config", "run"]
