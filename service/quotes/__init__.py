"""Price quotes: what an instance with some GPUs costs, per hour or to buy."""
