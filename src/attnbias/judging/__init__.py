"""How a claim is judged, in one room: the claims model and its statistics (`claims`: `Claim`,
`Rule`, `Effect`, the verdict words), the experiments' verdict rules as pure functions of
stored curves (`verdicts`), the papers' numbers they are held to (`papers`), the claims register
(`register`) and the report and forest plot (`report`, `forest`).

The drivers (attnbias.experiments) use this package; it imports nothing of theirs
(tests/test_layers.py). `register` reads the experiments' names and configs from
`attnbias.experiment_registry`, a room below this one, to state each protocol from its config.
"""
