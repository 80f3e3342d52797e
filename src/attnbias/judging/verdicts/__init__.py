"""The claim rules of the experiments, as pure functions of stored curves.

Each function states its rule (attnbias.judging.claims.Rule) before it looks at the data and
returns a Claim whose verdict follows the 95 % interval of the effect. They take Curves
(attnbias.curves: per-run metric values on the recording grid) and plain numbers, never configs,
files or a driver, so that the tests can feed them constructed inputs and mutate their
comparisons (tests/test_claim_mutations.py).
"""
