"""How a step's time grows with its input, as a ratio between two sizes (never a wall time).

The best of a few repeats is taken at each size (the least disturbed by the other work on a
loaded machine), and the ratio compared with what linear and quadratic growth would give: a
test asserts a bound well above linear and well below quadratic, so it fails for a quadratic
step on any machine and passes for a linear one on a busy one.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable


def best_time(step: Callable[[], object], repeats: int = 5) -> float:
    """The shortest of ``repeats`` runs of ``step()``, in seconds."""
    times = []
    for _ in range(repeats):
        gc.collect()  # the garbage of the run before is not this run's
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return min(times)


def growth(make: Callable[[int], Callable[[], object]], small: int, large: int,
           repeats: int = 5) -> float:
    """Time of the step ``make(large)`` builds over that of ``make(small)`` (the building
    itself not timed): about large/small for a linear step, its square for a quadratic one."""
    small_step, large_step = make(small), make(large)
    return best_time(large_step, repeats) / max(best_time(small_step, repeats), 1e-6)


def linear_bound(small: int, large: int) -> float:
    """The ratio a test allows: size ratio ** 1.7 (16x the input: 111, against 16 for a
    linear step and 256 for a quadratic one). A linear step measures up to twice its ratio
    on a busy machine (a large input leaves the processor's caches, a neighbour takes the
    core); a quadratic one cannot come under."""
    return (large / small) ** 1.7
