"""attnbias: the implicit bias of attention, runnable and checkable."""

__version__ = "0.1.0"
