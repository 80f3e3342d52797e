"""antipodal: ngd-fixed on data whose optimal tokens of the two classes are antipodal, ±μ
(NGD paper Fig. 5): the global convergence of NGD does not need orthogonal optimal tokens."""

from .ngd_fixed import Config, run

DESCRIPTION = "ngd-fixed with antipodal optimal tokens (NGD paper Fig. 5)"

__all__ = ["DESCRIPTION", "Config", "run"]
