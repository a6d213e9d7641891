"""The engine's compiled loops, compiled (or loaded from numba's on-disk cache) before a request
or a test needs them: the serving model (:mod:`compiled`) and an inference estimate's split loop
(:mod:`compiled_serving`), the training walk
(:mod:`compiled_training`), the compute-job scaling (:mod:`compiled_scaling`) and the ranking's
serving floors under load (:mod:`service.engine.choice.load_floors`).

``python -m service.engine.physics.precompile``: what ``make test`` runs before the suite, so
the suite's processes load the loops from the cache instead of each compiling them (~15 s of
CPU on a fresh checkout) while a live-server test waits for its server to start."""

from __future__ import annotations

from service.engine.choice import load_floors
from service.engine.physics import (
    compiled,
    compiled_scaling,
    compiled_serving,
    compiled_training,
)


def warm_up() -> None:
    """Every compiled loop, compiled or loaded."""
    compiled.warm_up()
    compiled_serving.warm_up()
    compiled_training.warm_up()
    compiled_scaling.warm_up()
    load_floors.warm_up()


if __name__ == "__main__":  # pragma: no cover - a command
    warm_up()
