"""`exam report …` and `exam compare`: reading stored runs, re-graded with today's rules."""

from __future__ import annotations

import sys

import click

from exam.cli.common import (
    InputError,
    agent_filter,
    agents_option,
    db_option,
    emit,
    open_registry,
    open_store,
    print_report,
    print_scorecard,
    report_format,
    verdict_options,
    verdict_settings,
    version_filter,
)

EXIT_PRINTED = """

\b
Exit status: 0 printed · 2 bad input (no matching runs, an unreadable store)."""


class ReportGroup(click.Group):
    """`exam report NAME`: the commands written below, and one made from the registry
    (exam/reports/kinds.py) for every other report with a text rendering, its ``params`` as
    options: a new report module is on the CLI with no change here."""

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        self.__dict__.setdefault("_own", {})[name or cmd.name] = cmd

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        own = self.__dict__.setdefault("_own", {}).get(cmd_name)
        return own if own is not None else self.commands.get(cmd_name)  # the registry: lazily

    @property
    def commands(self) -> dict[str, click.Command]:
        from exam.reports import kinds

        own, made = self.__dict__.setdefault("_own", {}), self.__dict__.setdefault("_made", {})
        out = dict(own)
        for kind in kinds.commands():
            if kind.name not in out:
                out[kind.name] = made.get(kind.name) or made.setdefault(kind.name,
                                                                        _kind_command(kind))
        return out

    @commands.setter
    def commands(self, value) -> None:  # click sets it in __init__
        self.__dict__["_own"] = dict(value or {})


def _kind_command(kind) -> click.Command:
    """`exam report NAME` for a registered report: its params as options, the formats it
    renders, --db; built through the registry with the CLI's grade source."""
    name = kind.name

    def command(fmt, db, **args) -> None:
        from exam.reports import kinds
        from exam.reports.inputs import CLI

        print_report(name, kinds.build(name, open_store(db), CLI, **args), fmt)

    for p in reversed(kind.params):
        kw = {"type": click.IntRange(min=p.minimum) if p.type == "int" else str,
              "required": p.required, "multiple": p.many, "help": p.help}
        if p.default not in (None, ()):
            kw.update(default=p.default, show_default=True)
        command = click.option(f"--{p.name.replace('_', '-')}", p.name, **kw)(command)
    command = click.option("--format", "fmt", type=click.Choice(list(kind.formats)),
                           default="text", show_default=True,
                           help="Output format (docs/reports.md).")(command)
    return click.command(name, help=(kind.summary or f"The {kind.title} report.")
                         + EXIT_PRINTED)(db_option(command))


@click.group("report", cls=ReportGroup)
def report() -> None:
    """Reports over stored runs, re-graded with today's grader and bank."""


@report.command("scorecard")
@agent_filter
@version_filter
@click.option("--run", "run_ids", multiple=True, type=int, help="Only these runs.")
@click.option("--brief", is_flag=True, help="Counts only, no per-question evidence (text).")
@report_format
@db_option
def report_scorecard(agent, label, run_ids, brief, fmt, db) -> None:
    """Per agent and version: verdicts, run statuses, cost, and the evidence of every red line.

    \b
    Exit status: 0 printed · 2 bad input (no matching runs, an unreadable store).
    """
    from exam.reports import kinds
    from exam.reports.inputs import CLI
    from exam.reports.selection import excluded_words

    asked = kinds.ask("scorecard", open_store(db), CLI, agent=agent, version=label,
                      run_id=run_ids, every_cell=fmt != "text")
    gone = [r for r in asked.runs if r.excluded_reason]  # asked for by id: read as asked, said so
    if gone:
        click.echo(f"note: excluded from every other report, shown as asked: "
                   f"{excluded_words(gone)}", err=True)
    print_scorecard(asked.report(), fmt, details=not brief, store=asked.inputs.store)



@report.command("discrimination")
@agent_filter
@click.option("--k", "k", type=click.IntRange(min=1), default=3, show_default=True,
              help="pass^k at this fixed k (unbiased C(c,k)/C(n,k)).")
@click.option("--details", is_flag=True,
              help="List every question (text); by default regression guards fold into one line.")
@report_format
@db_option
def report_discrimination(agent, k, details, fmt, db) -> None:
    """Which questions separate versions, which only guard, which are broken (questions × versions).

    \b
    Exit status: 0 printed · 2 bad input (no matching runs, an unreadable store).
    """
    from exam.marks import use_colour
    from exam.reports import kinds
    from exam.reports.inputs import CLI

    result = kinds.build("discrimination", open_store(db), CLI, agent=agent, k=k)
    if fmt == "text" and details:
        from exam.reports.discrimination import text
        from exam.reports.kinds import missing_notes

        emit("\n".join([*missing_notes(result), text(result, use_colour(), True)]))
    else:
        print_report("discrimination", result, fmt)


@report.command("rebalance")
@click.option("--since", type=click.DateTime(formats=["%Y-%m-%d"]),
              help="Only runs started on or after this date (YYYY-MM-DD; default: all runs).")
@agent_filter
@click.option("--band", type=(float, float), default=(0.3, 0.8), show_default=True,
              metavar="LOW HIGH", help="Target pass rate on the latest version.")
@click.option("--min-versions", type=int, default=3, show_default=True,
              help="Versions with enough repeats before a guard may be retired.")
@click.option("--min-repeats", type=int, default=5, show_default=True,
              help="Graded repeats a version needs to count towards --min-versions.")
@click.option("--keep-guards", type=int, default=2, show_default=True,
              help="Saturated guards kept per category (at least 1).")
@click.option("--target-informative", type=int, default=2, show_default=True,
              help="Informative questions wanted per category.")
@click.option("--min-runs-item-rest", type=int, default=20, show_default=True,
              help="Runs needed before item-rest correlations are shown.")
@click.option("--save", is_flag=True,
              help="Keep this rebalance as a snapshot; the next one shows what changed since.")
@click.option("--write-tags", is_flag=True,
              help="Record each question's class and difficulty as tags in the bank files.")
@report_format
@db_option
def report_rebalance(since, agent, band, min_versions, min_repeats, keep_guards,
                     target_informative, min_runs_item_rest, save, write_tags, fmt, db) -> None:
    """The quarterly review: difficulty, discrimination, the category mix and concrete advice.

    \b
    Exit status: 0 printed · 2 bad input (settings, no matching runs, an unreadable store).
    """
    from exam.reports import kinds, rebalance
    from exam.reports.inputs import CLI

    settings = rebalance.RebalanceRules(band=tuple(band), min_versions=min_versions,
                                  min_repeats=min_repeats, keep_guards=keep_guards,
                                  target_informative=target_informative,
                                  min_runs_item_rest=min_runs_item_rest)
    settings.check()
    store = open_store(db)
    asked = kinds.ask("rebalance", store, CLI, agent=agent, since=since, settings=settings)
    result = asked.report()
    print_report("rebalance", result, fmt)
    if save:
        for agent_report, sid in zip(result["agents"], rebalance.save(store, result), strict=True):
            click.echo(f"snapshot #{sid} saved for {agent_report['agent']}", err=True)
    if write_tags:
        for path in rebalance.write_tags(result, asked.inputs.cells()):
            click.echo(f"tags written: {path}", err=True)


@click.command("compare")
@click.argument("agent")
@click.argument("versions", metavar="[OLD] NEW", nargs=-1, required=True)
@click.option("--fail-on", type=click.Choice(["verdict", "regression", "any-fail", "never"]),
              default="verdict", show_default=True,
              help="verdict: exit with the verdict's code; any-fail: also 1 when a shipped "
                   "version fails anything; never: 0. (regression is the old name of verdict.)")
@verdict_options
@click.option("--settle", is_flag=True,
              help="Re-run the questions not yet decided (held, or a drop of min_effect ruled "
                   "out) on NEW, and on OLD with --old-url/--old-agent, until decided or "
                   "--budget.")
@click.option("--budget", type=click.IntRange(min=1), default=300, show_default=True,
              help="Agent calls --settle may spend.")
@click.option("--step", type=click.IntRange(min=1), default=3, show_default=True,
              help="Repeats per undecided question per --settle round.")
@click.option("--max-repeats", type=click.IntRange(min=2), default=40, show_default=True,
              help="Answered repeats of NEW per question at which --settle stops.")
@click.option("--old-url", metavar="URL",
              help="Where OLD still answers: --settle re-runs it too (no credentials or "
                   "query string; for those use --old-agent).")
@click.option("--old-agent", metavar="NAME",
              help="A registry entry that answers as OLD (same bank): --settle re-runs it "
                   "too, its runs recorded as AGENT's version OLD.")
@report_format
@agents_option
@db_option
def compare_cmd(agent, versions, fail_on, alpha, min_effect, min_answered, coverage, severity,
                no_history, settle, budget, step, max_repeats, old_url, old_agent, fmt, agents,
                db) -> None:
    """Before/after: the verdict (ship, hold, incomplete, undecided, pending) with its evidence.

    Without OLD, NEW is compared against the agent's last version shipped before it (the
    first version, a version whose verdict against its own baseline was ship, or one
    recorded with exam ship); the output says which.

    \b
    Exit status:
      0  ship
      1  hold (a regression, with its evidence)
      2  bad input (an unknown version, an unreadable store)
      3  incomplete (answered cells below the coverage floor)
      4  undecided (too few repeats: which questions, how many more)
      5  pending (needs_human cells decide it: exam review; or a ship resting on a
         rubric changed since OLD ran, which OLD's rubric reads worse)
    """
    from exam.reports import baseline, compare, kinds
    from exam.reports.inputs import CLI

    if len(versions) > 2:
        raise InputError(f"expected AGENT [OLD] NEW, found {len(versions)} versions: "
                         f"{' '.join(versions)}")
    old, new = (None, *versions) if len(versions) == 1 else versions
    settings = verdict_settings(alpha, min_effect, min_answered, coverage, severity, no_history)
    if (old_url or old_agent) and not settle:
        raise InputError("--old-url and --old-agent say where OLD answers for --settle: "
                         "add --settle")
    if old_url and old_agent:
        raise InputError("give --old-url or --old-agent, not both")
    store = open_store(db)
    asked = kinds.ask("compare", store, CLI, agent=agent, old=old, new=new, settings=settings)
    if settle:
        from exam.decide.settle import settle_cli

        regraded, records = asked.inputs.cells(), asked.args["records"]
        base = (baseline.asked(old, baseline.baseline_of(regraded, agent, new, records, settings))
                if old else baseline.baseline_of(regraded, agent, new, records, settings))
        if base is None:
            raise compare.CompareError(f"{agent} {new} is the first version: nothing shipped "
                                       "before it to compare with (give OLD)")
        old = base.version
        result = settle_cli(store, open_registry(agents), agent, old, new, settings,
                            budget=budget, step=step, max_repeats=max_repeats,
                            echo=lambda m: click.echo(m, err=True), old_url=old_url,
                            old_agent=old_agent)
        baseline.annotate(result, base)
    else:
        result = asked.report()
        old = result["old"]
    print_report("compare", result, fmt)
    if result["verdict"] == "undecided" and not settle:
        click.echo(f"next: exam compare {agent} {old} {new} --settle --old-url URL   # re-runs "
                   f"the questions not yet decided on {new} and, where {old} still answers, "
                   f"on {old} (at most --budget calls)", err=True)
    sys.exit(compare.exit_code(result, fail_on))


@click.command("ship")
@click.argument("agent")
@click.argument("version", required=False)
@click.option("--reason", default="", show_default=True,
              help="Why it ships (kept with the decision and shown).")
@click.option("--by", "shipped_by", help="Who decided (default: the user running exam).")
@db_option
def ship_cmd(agent, version, reason, shipped_by, db) -> None:
    """Record that VERSION of AGENT shipped, or, without VERSION, show the shipped version.

    The shipped version is what `exam compare AGENT NEW` compares against. By default it
    follows from the verdicts (the first version; then each version whose verdict against
    its own baseline is ship); a team that decides by hand records its decision here (who,
    when, why), and it counts from then on.

    \b
    Exit status: 0 recorded (or shown) · 2 bad input (no counted run of VERSION: none
    stored, or every one excluded; an unreadable store).
    """
    import datetime as dt
    import getpass

    from exam.reports import baseline
    from exam.reports.inputs import CLI
    from exam.reports.selection import report_runs

    store = open_store(db)
    if version is not None:
        who = shipped_by if shipped_by is not None else getpass.getuser()
        rec = baseline.record_ship(store, agent, version, who, reason, "cli")
        click.echo(f"{agent} {version} shipped (decision {rec.id}, by {rec.shipped_by or '—'}"
                   + (f": {rec.reason}" if rec.reason else "") + "); exam compare "
                   f"{agent} NEW compares against it from now on")
        return
    runs = report_runs(store, agent)
    records = store.ship_records(agent)
    shipped = baseline.shipped_version(CLI.cells(store, runs), agent, records)
    if shipped is None:
        raise InputError(f"no counted run of {agent}")
    click.echo(f"{agent}: shipped {shipped.version} ({shipped.why})")
    for r in records:
        when = dt.datetime.fromtimestamp(r.shipped_at, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        click.echo(f"  decision {r.id}: {r.version} shipped by {r.shipped_by or '—'} on {when} "
                   f"via {r.source}" + (f": {r.reason}" if r.reason else ""))
