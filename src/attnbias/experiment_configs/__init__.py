"""The configs of the experiments whose protocol the claims register states (judging/register.py),
kept apart from their drivers so that reading a config imports no driver
(`experiment_registry.CONFIG_MODULES`; tests/test_layers.py). Each module's `Config` is the
class its driver runs with; `sweep` and `real` hold the fields the drivers' configs share."""
