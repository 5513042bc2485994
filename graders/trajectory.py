"""Tool-trajectory checks: which tools the agent reports having called (issue 10).

Missing evidence is not a pass: when a question expects tools and the
reply reports no steps, every tool check is ``needs_human`` with that reason.
"""

from __future__ import annotations

from collections.abc import Iterable

from graders.model import CheckResult, Reply, ToolExpectation
from graders.normalize import normalize

NO_STEPS = "agent reports no steps"


def _matches(entry, tool: str) -> bool:
    """A tool name matches an entry when an alternative matches the whole (normalised) name."""
    name = normalize(tool)
    return any(alt.regex.fullmatch(name) for alt in entry.alternatives)


def check_tools(spec: ToolExpectation, reply: Reply) -> Iterable[CheckResult]:
    if reply.steps is None:
        yield CheckResult("tools", "needs_human", evidence=NO_STEPS)
        return
    called = [s.tool for s in reply.steps]
    order = " → ".join(called) or "(no tool called)"
    for i, entry in enumerate(spec.expect):
        if any(_matches(entry, t) for t in called):
            yield CheckResult(f"tools.expect[{i}]", "pass", evidence=f"called: {order}")
        else:
            yield CheckResult(
                f"tools.expect[{i}]", "fail", missing=(entry.source,), evidence=f"called: {order}"
            )
    for i, entry in enumerate(spec.forbidden):
        bad = tuple(t for t in called if _matches(entry, t))
        yield CheckResult(
            f"tools.forbidden[{i}]", "fail" if bad else "pass", unexpected=bad,
            evidence=f"called: {order}",
        )
    for tool, arg_spec in spec.args.items():
        calls = [s for s in reply.steps if normalize(s.tool) == normalize(tool)]
        name = f"tools.args.{tool}"
        if not calls:
            yield CheckResult(name, "fail", missing=(tool,), evidence=f"{tool} never called; {order}")
            continue
        problems_missing: list[str] = []
        problems_unexpected: list[str] = []
        for key, accepted in arg_spec.items():
            accepted_n = {normalize(a) for a in accepted}
            values = [normalize(str(c.args.get(key, ""))) for c in calls]
            if not any(v in accepted_n for v in values):
                problems_missing.append(f"{key}={'|'.join(accepted)}")
                problems_unexpected.extend(f"{key}={v}" for v in values)
        yield CheckResult(
            name, "fail" if problems_missing else "pass", tuple(problems_missing),
            tuple(problems_unexpected), evidence=f"{tool} args: " + "; ".join(
                str(dict(c.args)) for c in calls[:3]),
        )
    if spec.max_steps is not None:
        n = len(reply.steps)
        ok = n <= spec.max_steps
        yield CheckResult(
            "tools.max_steps", "pass" if ok else "fail",
            unexpected=() if ok else (str(n),), evidence=f"{n} step(s), max {spec.max_steps}",
        )
