"""The ``tether`` command. One module per command group, each imported only when used.

``COMMANDS`` maps a command name to the module and object that implement it
and a one-line summary; ``tether --help`` prints the summaries without
importing any command module, so it starts fast.
"""

from __future__ import annotations

from collections.abc import MutableMapping

import typer
from typer.core import TyperGroup

try:                       # Typer >= 0.2x ships its own copy of click; older Typer uses click itself
    from typer import _click as click
except ImportError:        # pragma: no cover - depends on the installed Typer
    import click  # type: ignore[no-redef]

# name -> (module, attribute, kind, summary). kind "command": a function (its
# module's HELP-like text is the attribute named by the 5th item); "group": a Typer app.
COMMANDS: dict[str, tuple[str, str, str, str, str | None]] = {
    "eval": ("eval", "eval_command", "command", "Run an evaluation suite (c4 or a folder of cases) against models or agents.", "HELP"),
    "run": ("run", "run_command", "command", "Run one case step by step, guarded and stored.", "HELP"),
    "runs": ("runs", "app", "group", "Runs, evals and approvals in the store: list, evals, approvals, show, export, import.", None),
    "resume": ("resume", "resume_command", "command", "Continue an interrupted or paused run.", "RESUME_HELP"),
    "approve": ("resume", "approve_command", "command", "Decide a pending approval and continue the run.", "APPROVE_HELP"),
    "guard-check": ("guard_check", "guard_check_command", "command", "Would my guards have caught this? Replay a run through a guard stack.", "HELP"),
    "case": ("case", "app", "group", "List, show, validate and write case files.", None),
    "score": ("score", "score_command", "command", "Re-score a results file from its stored runs (optionally with a judge).", "HELP"),
    "review": ("review", "app", "group", "Human review of rubric criteria: export a sheet, import verdicts.", None),
    "diff": ("diff", "diff_command", "command", "Compare two results files or runs: steps, args, recovery, terminal.", "HELP"),
    "baseline": ("diff", "baseline_app", "group", "Accept a results file as the baseline; list baselines.", None),
    "guard": ("guard_mcp", "app", "group", "Guard another agent's tools: a guarded gateway in front of an MCP server.", None),
    "gateway": ("gateway", "gateway_command", "command", "An OpenAI-compatible LLM gateway with guards, for agents in any language.", "HELP"),
    "report": ("report", "report_command", "command", "Write a results file as one self-contained HTML report.", "HELP"),
    "view": ("view", "view_command", "command", "Serve the store's runs and evals as web pages on 127.0.0.1.", "HELP"),
    "stats": ("stats", "stats_command", "command", "Run metrics over the store: completion, steps, loops, cost.", "HELP"),
    "store": ("store", "app", "group", "The store itself: info, check, prune, vacuum, copy (SQLite or PostgreSQL).", None),
}

ROOT_HELP = """Keep LLM tool-using agents on a short leash: guard them, test them, measure their stability.

\b
Examples:
  tether eval c4                        # the C4 suite, three calibration agents, offline
  tether eval c4 --model policy:steady --trials 3 --json results.json
  tether eval c4 --agent examples/agents/pydantic_ai_agent.py:build
  tether run C4-LD-01 --model policy:stubborn --guards on
  tether runs list                      # every run in the store, eval trials included
  tether case validate my-case.yaml     # file:line:column [field] errors

Each command has its own --help with examples."""


_BUILT: dict[str, click.Command] = {}


class LazyGroup(TyperGroup):
    """A Typer group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        spec = COMMANDS.get(name)
        if spec is None:
            return None
        if name not in _BUILT:         # built once per process: in-process callers (tests) invoke it many times
            _BUILT[name] = self._build(name, spec)
        return _BUILT[name]

    def _build(self, name: str, spec: tuple[str, str, str, str, str | None]) -> click.Command:
        module_name, attr, kind, summary, help_attr = spec
        import importlib

        module = importlib.import_module(f".{module_name}", __name__)
        obj = getattr(module, attr)
        if kind == "group":
            command: click.Command = _lazy_group(obj)
        else:
            single = typer.Typer(rich_markup_mode="rich", pretty_exceptions_enable=False)
            single.command(name, help=getattr(module, help_attr) if help_attr else None,
                           no_args_is_help=name not in ("eval", "stats", "view"))(obj)
            command = typer.main.get_command(single)
        command.name = name
        _finish(command)
        return command

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        """The root's flags (--help, --install-completion, --show-completion) default to
        False rather than None: Typer coerces a flag's value unless it is already a bool,
        and coercing None builds a pydantic TypeAdapter (~0.1 s) on every invocation,
        ``tether runs --help`` included. False is what an absent flag means, and each
        flag's callback does nothing for it, so the behaviour is unchanged."""
        params = super().get_params(ctx)
        for p in params:
            _absent_flag_is_false(p)
        return params

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The root help, plain: Typer's rich help pulls in markdown rendering (~0.2 s)
        and would import every command module for its one-line summary."""
        formatter.write_usage(ctx.command_path, "[OPTIONS] COMMAND [ARGS]...")
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write(ROOT_HELP.replace("\b\n", "") + "\n")
        options = [rec for p in self.get_params(ctx) if (rec := p.get_help_record(ctx)) is not None]
        if options:
            with formatter.section("Options"):
                formatter.write_dl(options)
        with formatter.section("Commands"):
            formatter.write_dl([(name, spec[3]) for name, spec in COMMANDS.items()])


def _finish(command: click.Command) -> None:
    _tidy(command)
    from ._params import plain_coercion

    plain_coercion(command)        # its options read without pydantic when their values are plain


def _lazy_group(group_app: typer.Typer) -> click.Command:
    """The click group of a command group (``tether runs``) whose subcommands are built
    when first asked for: Typer reads every parameter of every subcommand to build one
    (~10% of a ``tether runs list`` process); a command uses one. Listing them
    (``tether runs --help``, completion) builds them all, the same commands."""
    if group_app.registered_groups or len(group_app.registered_commands) < 2:
        return typer.main.get_command(group_app)
    import copy

    shell = copy.copy(group_app)
    shell.registered_commands = []
    group = typer.main.get_group(shell)
    infos = {info.name or typer.main.get_command_name(info.callback.__name__): info  # type: ignore[union-attr]
             for info in group_app.registered_commands}

    def build(name: str) -> click.Command:
        command = typer.main.get_command_from_info(infos[name], pretty_exceptions_short=group_app.pretty_exceptions_short,
                                                   rich_markup_mode=group_app.rich_markup_mode)
        _finish(command)
        return command

    group.commands = LazyCommands(list(infos), build)  # type: ignore[attr-defined]
    return group


class LazyCommands(MutableMapping):
    """A group's subcommands by name, in order, each built by ``build`` on first use."""

    def __init__(self, names: list[str], build):
        self._names = list(names)
        self._build = build
        self._built: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._built:
            if name not in self._names:
                raise KeyError(name)
            self._built[name] = self._build(name)
        return self._built[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        if name not in self._names:
            self._names.append(name)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        self._built.pop(name, None)

    def __iter__(self):
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def built(self) -> list[click.Command]:
        return list(self._built.values())


def _subcommands(command: click.Command) -> list[click.Command]:
    """The subcommands built so far (a lazy group finishes each when it builds it)."""
    commands = getattr(command, "commands", None)
    if isinstance(commands, LazyCommands):
        return commands.built()
    return list(commands.values()) if commands else []


COMPLETION_PARAMS = {"install_completion", "show_completion"}


def _absent_flag_is_false(param: click.Parameter) -> None:
    """A bool flag whose default is None (Typer's help and completion options) gets
    False: the same meaning, and a value Typer does not coerce (see LazyGroup.get_params)."""
    descriptor = getattr(param, "type_descriptor", None)
    if getattr(param, "is_flag", False) and param.default is None and descriptor is not None \
            and descriptor.annotation is bool:
        param.default = False


def _tidy(command: click.Command) -> None:
    """Below the root: no completion options (the root has them), and no ``<bool>``
    placeholder after a flag that takes no value."""
    command.params = [p for p in command.params if p.name not in COMPLETION_PARAMS]
    for p in command.params:
        if getattr(p, "is_flag", False) and getattr(p, "metavar", None) is None:
            p.metavar = ""
    help_option = command.get_help_option

    def get_help_option(ctx: click.Context):
        option = help_option(ctx)
        if option is not None:
            option.metavar = ""
            _absent_flag_is_false(option)   # `tether runs list --help`: the runs group's own --help is absent
        return option

    command.get_help_option = get_help_option  # type: ignore[method-assign]
    for sub in _subcommands(command):
        _tidy(sub)


app = typer.Typer(
    name="tether",
    cls=LazyGroup,
    help=ROOT_HELP,
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Keep LLM tool-using agents on a short leash."""


def _utf8_or_replace() -> None:
    """Runs and cases are UTF-8 (C4 is Chinese): a pipe or file gets UTF-8 whatever the locale
    says; a terminal that cannot show a character gets a replacement, not an internal error
    (PYTHONIOENCODING=ascii, an ISO-8859-1 locale)."""
    import codecs
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            if codecs.lookup(stream.encoding or "ascii").name == "utf-8":
                continue
            tty = stream.isatty()
        except (AttributeError, LookupError, ValueError):
            tty = False
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace") if tty else stream.reconfigure(encoding="utf-8", errors="replace")


def main() -> None:
    """The console script: every failure becomes one clear line and a documented
    exit code; ``--debug`` (anywhere) or ``TETHER_DEBUG=1`` shows the traceback."""
    import os
    import sys

    if "--debug" in sys.argv[1:]:
        sys.argv.remove("--debug")
        os.environ["TETHER_DEBUG"] = "1"
    _utf8_or_replace()

    try:
        app()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:
        # imported here, not above: `tether --help` needs no rich console
        from ._common import debug_enabled, describe

        if debug_enabled():
            raise
        code, message = describe(exc)
        from .._terminal import clean_text

        print(clean_text(f"error {message}"), file=sys.stderr)
        sys.exit(code)
