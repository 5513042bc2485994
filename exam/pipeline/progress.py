"""Progress: a bar on a terminal (tqdm), plain lines when not a TTY (CI logs, n8n)."""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter

from exam.records import CellRow
from exam.textsafe import terminal


class Progress:
    def __init__(self, totals: dict[int, tuple[str, int, int]], stream=None):
        """``totals``: run id → (label, cells already done, cells in the run)."""
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()

        self.totals = {rid: (terminal(label), d, t) for rid, (label, d, t) in totals.items()}
        self.done = {rid: d for rid, (_, d, _) in totals.items()}
        self.counts: dict[int, Counter] = {rid: Counter() for rid in totals}
        self.lock = threading.Lock()
        self.bars = {}
        self.last_line = 0.0
        if self.tty:
            from tqdm import tqdm

            for pos, (rid, (label, done, total)) in enumerate(self.totals.items()):
                self.bars[rid] = tqdm(total=total, initial=done, desc=label, position=pos,
                                      file=self.stream, leave=True, dynamic_ncols=True)

    def __call__(self, run_id: int, cell: CellRow) -> None:
        with self.lock:
            self.done[run_id] += 1
            self.counts[run_id][cell.run_status] += 1
            if self.tty:
                bar = self.bars[run_id]
                bar.update(1)
                trouble = {k: v for k, v in self.counts[run_id].items() if k != "ok"}
                if trouble:
                    bar.set_postfix(trouble, refresh=False)
                return
            label, _, total = self.totals[run_id]
            now = time.monotonic()
            step = max(1, total // 10)
            if self.done[run_id] % step == 0 or self.done[run_id] == total or \
                    now - self.last_line > 10:
                self.last_line = now
                trouble = ", ".join(f"{k} {v}" for k, v in self.counts[run_id].items() if k != "ok")
                print(f"{label}: {self.done[run_id]}/{total} cells" +
                      (f" ({trouble})" if trouble else ""), file=self.stream, flush=True)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()
