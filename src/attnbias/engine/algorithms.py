"""Moved: the optimiser vocabulary is `attnbias.optim.registry` (and `optim.algorithm`). This
module is removed as soon as its one remaining importer, experiments/atlas.py, imports
`optim.registry.available` (issue 32: no forwarders)."""

from ..optim.registry import available  # noqa: F401
