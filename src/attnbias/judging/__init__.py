"""How a claim is judged, in one room: the claims model and its statistics (`claims`: `Claim`,
`Rule`, `Effect`, the verdict words), the experiments' verdict rules as pure functions of
stored curves (`verdicts`), the papers' numbers they are held to (`papers`), the claims register
(`register`) and the report and forest plot (`report`, `forest`).

The drivers (attnbias.experiments) use this package; it imports no driver. One arrow reaches
the experiments' registry: `register` reads the experiments' names and configs through
`attnbias.experiments.base` (the register states each experiment's protocol from its config),
never a driver module (tests/test_layers.py).
"""
