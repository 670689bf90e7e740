"""The ``tether`` command. One module per command group."""

from __future__ import annotations

import typer

from . import case as case_cmd
from . import diff as diff_cmd
from . import eval as eval_cmd
from . import guard_check as guard_check_cmd
from . import guard_mcp as guard_mcp_cmd
from . import review as review_cmd
from . import resume as resume_cmd
from . import run as run_cmd
from . import runs as runs_cmd
from . import score as score_cmd

app = typer.Typer(
    name="tether",
    help=(
        "Keep LLM tool-using agents on a short leash: guard them, test them, measure their stability.\n\n"
        "Examples:\n\n"
        "  tether eval c4                          # the C4 suite against the three calibration agents, offline\n\n"
        "  tether eval c4 --model policy:steady --trials 3 --json results.json\n\n"
        "  tether run C4-LD-01 --model policy:stubborn --guards on   # one case, step by step\n\n"
        "  tether case list                        # the cases of the built-in C4 suite\n\n"
        "  tether case validate my-case.yaml       # check a case file, with file:line [field] errors"
    ),
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
app.add_typer(case_cmd.app, name="case")
app.command("eval", help=eval_cmd.HELP, no_args_is_help=False)(eval_cmd.eval_command)
app.command("run", help=run_cmd.HELP, no_args_is_help=True)(run_cmd.run_command)
app.add_typer(runs_cmd.app, name="runs")
app.command("resume", help=resume_cmd.RESUME_HELP, no_args_is_help=True)(resume_cmd.resume_command)
app.command("approve", help=resume_cmd.APPROVE_HELP, no_args_is_help=True)(resume_cmd.approve_command)
app.command("guard-check", help=guard_check_cmd.HELP, no_args_is_help=True)(guard_check_cmd.guard_check_command)
app.command("score", help=score_cmd.HELP, no_args_is_help=True)(score_cmd.score_command)
app.add_typer(review_cmd.app, name="review")
app.command("diff", help=diff_cmd.HELP, no_args_is_help=True)(diff_cmd.diff_command)
app.add_typer(diff_cmd.baseline_app, name="baseline")
app.add_typer(guard_mcp_cmd.app, name="guard")


def main() -> None:
    app()
