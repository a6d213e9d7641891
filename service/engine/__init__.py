"""Pure estimation engine: memory, roofline performance and parallelism. No I/O, no clock."""

from service.engine.physics.estimate import estimate, gpu_count_candidates, min_gpus_to_fit
from service.engine.validate import validate_workload

__all__ = ["estimate", "gpu_count_candidates", "min_gpus_to_fit", "validate_workload"]
