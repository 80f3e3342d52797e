"""The claims register reads the experiments' configs when it is built, not when it is imported
(issue 29): importing it (or the tally that `reproduce` ends with) reads no config, so a
CONFIG_DIR pointed elsewhere after import is the one the register reads."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROBE = textwrap.dedent(
    """
    import attnbias.experiment_registry as registry

    def refuse(*args, **kwargs):
        raise RuntimeError("a config was read")

    registry.load_config = refuse
    import attnbias.cli_tally
    import attnbias.judging.register as register
    try:
        register.entries()
    except RuntimeError as err:
        print("built on use:", err)
    """
)


def test_importing_the_register_reads_no_config():
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "built on use: a config was read"


def test_the_register_is_built_once_and_answers_as_register():
    from attnbias.judging import register

    assert register.entries() is register.entries()
    assert register.REGISTER == register.entries()
    assert "local-global/local-gaussian" in {e.id for e in register.entries()}
