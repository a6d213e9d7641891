"""gpu-advisor: which GPU, how many, from which offer, and why."""

__version__ = "0.1.0"
