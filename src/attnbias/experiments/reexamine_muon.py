"""reexamine-muon: was "Muon behaves like spectral descent: not supported" an artefact of torch's
Muon (bfloat16 Newton–Schulz, ‖g‖_F floored at 1e-7, so it stalls once gradients are small)?
Beside the atlas's SpectralDescent and torch's Muon, on the same runs: a float64 Muon-style
method (SpectralDescent by Newton–Schulz with momentum 0.95, Muon's default, no floor) and the
same without momentum, which separates the orthogonalisation from the momentum. Two candidate
explanations are judged: torch's implementation (`torch-muon-explains`) and Muon's momentum
(`momentum-explains`) (experiments/reexamine_atlas.py; configs/reexamine-muon.toml)."""

from .reexamine_atlas import Config, run

DESCRIPTION = "Re-examines atlas's Muon verdict: torch's Muon vs a float64 Muon-style method"

__all__ = ["DESCRIPTION", "Config", "run"]
