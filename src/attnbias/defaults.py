"""Default limits that the command line shows in its help.

They live in a module that imports nothing, so that `attnbias --help` needs neither torch nor
cvxpy; `svm.memory` and `engine.cluster` take theirs from here, and the memory estimates of the
solvers and the engine their unit, `FLOAT`.
"""

# An Att-SVM solve whose memory estimate exceeds this many GB is refused before it starts.
DEFAULT_MAX_MEMORY_GB = 8.0
FLOAT = 8  # bytes of a float64, as the memory estimates count

# Seconds a scheduler has to answer `--scheduler`'s handshake: Dask's own connect waits
# without bound on a peer that accepts the connection and never answers (an HTTP server).
CONNECT_TIMEOUT = 10.0

# What a user runs for the real-data packages (constraints.txt is CI's pin, not a user's).
INSTALL_REAL = "pip install 'attnbias[real]' (in a clone: pip install -e '.[real]')"
