"""Every code block in README.md and docs/**/*.md runs as written.

Each page runs in its own scratch folder (a fresh temp dir with the repository's
``examples/`` and ``benchmarks/`` linked in, as in a clone; ``tether``, ``python``
and ``pytest`` on PATH; ``TETHER_STORE`` inside the folder; no API keys; proxies
pointed at a closed port so nothing leaves the machine; the one repository file a
page runs, ``tests/adapters/mcp_flaky_server.py``, linked in), its blocks in order:

* ``bash`` / ``sh`` / ``shell`` / ``console`` blocks run in bash, one command at a
  time (``\\`` continuations and here-documents kept together; in ``console``
  blocks only the ``$ `` lines), variables carried from one command to the next.
  A command must exit 0, or one of the codes its trailing comment names
  (``# ... exit 3 ...``, ``# exit 0 or 1``);
* ``python`` blocks run as scripts in the folder: in-process (``runpy``, with the
  script's ``__main__``, folder, environment, path and a fresh context; see
  ``run_python_in_process``), or as ``python block.py`` when they name something
  process-wide (``PROCESS_WIDE``: subprocesses, signals, the environment, ...);
* ``yaml``, ``json`` and ``toml`` blocks must parse; other languages are text.

Two lists below change that for sections of a page: ``ELSEWHERE`` (shell blocks another
test runs as written and checks more closely: not run twice) and ``IN_PROCESS`` (lists
of plain ``tether`` commands: run through the CLI app in-process, as tests/cli do).

A comment right before a block (after the previous block) changes that:

* ``<!-- docs-test: skip (the reason) -->``: not run; the reason is reported;
* ``<!-- docs-test: file PATH -->``: the block is written to PATH in the folder
  (the page says to save it there), checked for syntax, not run;
* ``<!-- docs-test: slow -->``: run only with ``pytest -m slow`` (the default run
  skips it, and says so).

One test per block (``pytest tests/test_docs.py -k durable`` runs one page's), in page
order, the blocks of a page sharing its folder; a block selected alone first runs the
blocks before it. The end of the run says how many blocks each page ran and skipped,
with the reasons (``python tests/test_docs.py`` prints the table for every page).
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md"))]
SHELL = {"bash", "sh", "shell", "console"}
PYTHON = {"python", "py"}
TIMEOUT = 240          # seconds per block: a guard against a hang, not a performance claim

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
MARKER = re.compile(r"<!--\s*docs-test:\s*(?P<kind>skip|file|slow)\b\s*(?P<arg>.*?)\s*-->", re.S)
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_./:@%+,-]*")    # NAME=value before a command, unquoted
EXIT = re.compile(r"\bexits? (\d+)(?: or (\d+))?")
# shell blocks another test runs as written, checking what they print too: not run twice (page, start of the section's heading)
ELSEWHERE = {
    ("README.md", "## Durable runs"): "tests/test_readme_flows.py runs these commands and checks their output",
    ("README.md", "## Testing your agent"): "tests/test_readme_flows.py runs these commands and checks their output",
}
# sections whose shell blocks are lists of plain ``tether ...`` commands (``|`` between two of them, a final
# ``> FILE``, ``&&`` between commands and ``NAME=value`` before one allowed, nothing else of the shell) over the
# calibration policies: they run in-process, through the
# CLI app as tests/cli do (an escaping exception becomes what ``main()`` prints), in the page's folder with its
# environment. The commands, their order and exit codes are the page's; only the interpreter start is saved.
IN_PROCESS = {
    ("docs/durable.md", "## The commands"),
    ("docs/durable.md", "## A store that holds a year of runs"),
    ("docs/diff.md", "## Comparing two evaluations"),
    ("docs/diff.md", "## Change types"),
    ("docs/diff.md", "## Baselines"),
    ("docs/diff.md", "## In Python"),
    ("docs/report.md", "## Run metrics"),
    ("docs/report.md", "## OpenTelemetry"),
    ("docs/events.md", "## The delta rule"),
    ("docs/adapters/pydantic-ai.md", "## Under `tether eval`"),
}
# a python block that names one of these may touch process-wide state: it runs as ``python block.py``; any other
# runs in-process as that script would (see run_python_in_process)
PROCESS_WIDE = re.compile(r"\b(?:subprocess|Popen|os\.system|multiprocessing|threading|signal|atexit|os\.environ|"
                          r"putenv|sys\.exit|chdir|sys\.path|sys\.modules|logging|warnings|set_tracer_provider|"
                          r"opentelemetry|guard_runs|set_model_requests_allowed|faulthandler|resource)\b")


def plain_tether(command: str) -> bool:
    """``tether ARGS`` where the shell would only split words and remove quotes (no expansion, no operator)."""
    quote = ""
    for ch in command:
        if quote:
            if ch == quote:
                quote = ""
            elif quote == '"' and ch in "$`\\!":
                return False
        elif ch in "'\"":
            quote = ch
        elif ch in "$`;&<>|()*?[]{}~\\!#":
            return False
    return not quote and (command == "tether" or command.startswith("tether "))


@dataclass
class Block:
    page: str
    index: int                     # 1-based, in page order
    line: int                      # line of the opening fence
    lang: str
    body: str
    marker: str = ""               # skip / file / slow
    arg: str = ""
    in_process: bool = False       # a section of IN_PROCESS

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line} (block {self.index}, {self.lang or 'text'})"


@dataclass
class Report:
    page: str
    ran: list[Block] = field(default_factory=list)
    skipped: list[tuple[Block, str]] = field(default_factory=list)
    files: list[Block] = field(default_factory=list)
    seconds: dict[int, float] = field(default_factory=dict)     # block index -> wall time

    def text(self) -> str:
        head = (f"{self.page}: ran {len(self.ran)}, wrote {len(self.files)} file(s), "
                f"skipped {len(self.skipped)}")
        slow = [f"  line {b.line} ({b.lang}) took {self.seconds[b.index]:.0f} s" for b in self.ran
                if self.seconds.get(b.index, 0) >= 10]
        return "\n".join([head, *(f"  skipped line {b.line} ({b.lang}): {why}" for b, why in self.skipped), *slow])


def blocks(page: str) -> list[Block]:
    text = (ROOT / page).read_text(encoding="utf-8")
    found, previous_end = [], 0
    for i, m in enumerate(FENCE.finditer(text), 1):
        body = textwrap.dedent(m.group("body"))
        block = Block(page, i, text.count("\n", 0, m.start()) + 1, m.group("lang").lower(), body)
        markers = list(MARKER.finditer(text, previous_end, m.start()))
        if markers:
            block.marker, block.arg = markers[-1].group("kind"), markers[-1].group("arg").strip()
        heading = ([""] + re.findall(r"^## .*$", text[:m.start()], re.M))[-1]
        elsewhere = next((why for (p, h), why in ELSEWHERE.items() if p == page and heading.startswith(h)), None)
        if elsewhere and block.lang in SHELL and not block.marker:
            block.marker, block.arg = "skip", f"({elsewhere})"
        block.in_process = block.lang in SHELL and any(p == page and heading.startswith(h) for p, h in IN_PROCESS)
        found.append(block)
        previous_end = m.end()
    return found


# -- the scratch folder ------------------------------------------------------------------------------------------

def scratch_env(folder: Path) -> dict[str, str]:
    bin_dir = folder / ".docs-bin"
    bin_dir.mkdir()
    wrappers = {"tether": '-m tether.cli "$@"', "python": '"$@"', "python3": '"$@"', "pytest": '-m pytest "$@"'}
    refuse = ('if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then '
              'echo "docs-test: pip is not run here; mark the block docs-test: skip" >&2; exit 126; fi\n')
    for name, args in wrappers.items():
        path = bin_dir / name
        path.write_text(f'#!/bin/sh\n{refuse}exec "{sys.executable}" {args}\n', encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    for name in ("pip", "pip3"):              # never install into the environment the tests run in
        path = bin_dir / name
        path.write_text('#!/bin/sh\necho "docs-test: pip is not run here; mark the block docs-test: skip" >&2\n'
                        'exit 126\n', encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    for name in ("examples", "benchmarks"):
        (folder / name).symlink_to(ROOT / name, target_is_directory=True)
    for name in ("tests/adapters/mcp_flaky_server.py",):      # a file a page runs "from a clone"
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).symlink_to(ROOT / name)
    env = {k: v for k, v in os.environ.items()
           if not k.endswith(("_API_KEY", "_TOKEN")) and k not in ("CI", "PYTEST_ADDOPTS", "TETHER_DEBUG")}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(ROOT / "src"),
        TETHER_STORE=str(folder / ".tether" / "tether.db"),
        HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9", ALL_PROXY="http://127.0.0.1:9",
        NO_PROXY="127.0.0.1,localhost", PYTHONDONTWRITEBYTECODE="1", COLUMNS="200",
        # pytest in a page sees what a fresh project has: tether's plugin and pytest-asyncio, not this
        # environment's other plugins (which also cost seconds per start)
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTEST_PLUGINS="tether.testing.pytest_plugin,pytest_asyncio.plugin",
    )
    return env


# -- shell blocks ------------------------------------------------------------------------------------------------

def _split_comment(line: str) -> tuple[str, str]:
    """The command and its trailing ``# comment`` (a ``#`` outside quotes after a blank)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def _console_exit_codes(kept: list[str], page_lines: list[str]) -> list[str]:
    """In a console block, ``$ echo $?`` followed by a number states the previous command's exit code:
    carry it into that command's comment, where the exit-code rule reads it."""
    out = list(kept)
    for i, line in enumerate(out):
        if line.strip() == "echo $?" and i > 0:
            at = page_lines.index("$ " + line)
            shown = page_lines[at + 1].strip() if at + 1 < len(page_lines) else ""
            if shown.isdigit():
                out[i - 1] = f"{out[i - 1]}  # exit {shown}"
    return out


def commands(block: Block) -> list[tuple[str, set[int], str]]:
    """(command, allowed exit codes, the line as written) for each command of a shell block."""
    lines = block.body.splitlines()
    if block.lang == "console":
        lines = [x[2:] if x.startswith("$ ") else None for x in lines]
        # continuation lines of a $ command have no prompt: keep them when the previous one ends with a backslash
        kept, carry = [], False
        for raw, orig in zip(lines, block.body.splitlines()):
            if raw is not None or carry:
                line = raw if raw is not None else orig
                kept.append(line)
                carry = line.rstrip().endswith("\\")
        lines = _console_exit_codes(kept, block.body.splitlines())
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        i += 1
        cmd, comment = _split_comment(line)
        if not cmd.strip():
            continue
        parts, comments, written = [cmd], [comment], [line]
        while parts[-1].endswith("\\") and i < len(lines):
            parts[-1] = parts[-1][:-1]
            cmd, comment = _split_comment(lines[i])
            parts.append(cmd)
            comments.append(comment)
            written.append(lines[i])
            i += 1
        heredoc = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", parts[-1])
        if heredoc:
            end = heredoc.group(1)
            while i < len(lines):
                parts.append(lines[i])
                written.append(lines[i])
                i += 1
                if lines[i - 1].strip() == end:
                    break
        codes = {0}
        for m in EXIT.finditer(" ".join(comments)):
            codes = {int(x) for x in m.groups() if x}
        out.append(("\n".join(parts), codes, "\n".join(written)))
    return out


def run_shell(block: Block, folder: Path, env: dict[str, str]) -> None:
    script = []
    for n, (cmd, codes, written) in enumerate(commands(block), 1):
        allowed = " ".join(str(c) for c in sorted(codes))
        script += [cmd, "__rc=$?",
                   f"case \" {allowed} \" in *\" $__rc \"*) ;; *) "
                   f"printf 'docs-test: command %s exited %s (expected {allowed}):\\n%s\\n' {n} $__rc "
                   f"{_quote(written)} >&2; exit 97;; esac", "( exit $__rc )"]
    path = folder / f".docs-block-{block.index}.sh"
    path.write_text("\n".join([*script, "exit 0"]) + "\n", encoding="utf-8")
    _run(["bash", str(path)], block, folder, env)


def tether_in_process(command: str, folder: Path, env: dict[str, str], stdin: str | None = None
                      ) -> tuple[int, str, str]:
    """(exit code, output, stdout) of one plain ``tether ...`` command run through the CLI app in ``folder``
    with the environment ``env``, as the console script would end: an escaping exception becomes its message."""
    import shlex

    from typer.testing import CliRunner

    from tether.cli import app
    from tether.cli._common import describe

    assert plain_tether(command), f"not a plain tether command, so it cannot run in-process: {command}"
    changed = {k: v for k, v in env.items() if os.environ.get(k) != v and k not in ("PATH", "PYTHONPATH")}
    changed.update({k: None for k in os.environ if k not in env})          # API keys, CI, TETHER_DEBUG, ...
    old = Path.cwd()
    os.chdir(folder)
    try:
        res = CliRunner().invoke(app, shlex.split(command)[1:], input=stdin, env=changed)
    finally:
        os.chdir(old)
    code, out = res.exit_code, res.output
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        code, message = describe(res.exception)
        out += f"error {message}\n"
    return code, out, res.stdout


def run_in_process(block: Block, folder: Path, env: dict[str, str]) -> None:
    """A block of plain ``tether`` commands through the CLI app (see IN_PROCESS)."""
    for n, (cmd, codes, written) in enumerate(commands(block), 1):
        if block.lang == "console" and cmd.strip() == "echo $?":
            continue                       # the code it shows is the previous command's expected exit code
        for one in cmd.split(" && "):      # the shell's &&: the next runs only when this one exits 0
            words = one.strip().split(" ")
            assigned = {}
            while words and ASSIGNMENT.fullmatch(words[0]):
                name, _, value = words.pop(0).partition("=")
                assigned[name] = value
            stdin, last = None, None
            for part in " ".join(words).split(" | "):
                part, _, target = part.partition(" > ")
                assert plain_tether(f"tether {target.strip()}"), f"{block.where}: command {n}: {written}"
                code, out, stdout = tether_in_process(part.strip(), folder, {**env, **assigned}, stdin)
                if target.strip():
                    (folder / target.strip()).write_text(stdout, encoding="utf-8")
                stdin, last = stdout, (code, out)
            if last[0] != 0:
                break
        if last[0] not in codes:
            pytest.fail(f"{block.where} failed (in-process): command {n} exited {last[0]} (expected "
                        f"{' '.join(str(c) for c in sorted(codes))}):\n{written}\n--- output\n{last[1][-6000:]}",
                        pytrace=False)


def run_python_in_process(block: Block, folder: Path, env: dict[str, str]) -> None:
    """``python block.py`` without the interpreter start: the script runs as ``__main__`` in a fresh context
    (every context variable at its default, as in a new process), in the folder, with the folder's environment,
    ``sys.path[0]`` and ``sys.argv``, and Python's default warning filters; all of these are restored after, and
    modules imported from the folder are forgotten (another page may write a file of the same name)."""
    import contextlib
    import contextvars
    import io
    import runpy
    import traceback
    import warnings

    path = folder / f".docs-block-{block.index}.py"
    path.write_text(block.body, encoding="utf-8")
    saved = (dict(os.environ), list(sys.path), list(sys.argv), Path.cwd(), set(sys.modules))
    out, error = io.StringIO(), None
    try:
        os.environ.clear()
        os.environ.update(env)
        sys.path.insert(0, str(folder))
        sys.argv = [str(path)]
        os.chdir(folder)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), warnings.catch_warnings():
            warnings.resetwarnings()           # Python's defaults for a script
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", category)
            warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
            try:
                contextvars.Context().run(runpy.run_path, str(path), run_name="__main__")
            except SystemExit as exc:
                if exc.code not in (None, 0):
                    error = f"exit {exc.code}"
            except BaseException:              # noqa: BLE001 - reported with the block's place
                error = traceback.format_exc(limit=-8)
    finally:
        environ, sys.path[:], sys.argv[:], cwd, modules = saved
        os.environ.clear()
        os.environ.update(environ)
        os.chdir(cwd)
        for name in set(sys.modules) - modules:
            if str(getattr(sys.modules[name], "__file__", None) or "").startswith(str(folder)):
                del sys.modules[name]
    if error:
        pytest.fail(f"{block.where} failed (in-process):\n{block.body}\n--- output\n{out.getvalue()[-6000:]}\n"
                    f"--- error\n{error}", pytrace=False)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _run(argv: list[str], block: Block, folder: Path, env: dict[str, str]) -> None:
    try:
        done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{block.where} did not finish in {TIMEOUT} s\n{exc.stdout or ''}{exc.stderr or ''}")
    if done.returncode != 0:
        pytest.fail(f"{block.where} failed (exit {done.returncode}):\n{block.body}\n--- stdout\n"
                    f"{done.stdout[-6000:]}\n--- stderr\n{done.stderr[-6000:]}", pytrace=False)


# -- one block ---------------------------------------------------------------------------------------------------

def check_syntax(block: Block) -> None:
    try:
        if block.lang in ("yaml", "yml"):
            list(yaml.safe_load_all(block.body))
        elif block.lang == "json":
            json.loads(block.body)
        elif block.lang == "toml":
            tomllib.loads(block.body)
        elif block.lang in PYTHON:
            compile(block.body, block.where, "exec")
    except Exception as exc:            # noqa: BLE001 - reported with the block's place
        pytest.fail(f"{block.where} does not parse as {block.lang}: {exc}", pytrace=False)


def run_block(block: Block, folder: Path, env: dict[str, str]) -> str:
    """Run (or check) one block; returns 'ran' or 'file'."""
    if block.marker == "file":
        assert block.arg, f"{block.where}: `docs-test: file` needs a path"
        check_syntax(block)
        target = folder / block.arg
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.body, encoding="utf-8")
        return "file"
    if block.in_process:
        run_in_process(block, folder, env)
    elif block.lang in SHELL:
        run_shell(block, folder, env)
    elif block.lang in PYTHON and not PROCESS_WIDE.search(block.body):
        run_python_in_process(block, folder, env)
    elif block.lang in PYTHON:
        path = folder / f".docs-block-{block.index}.py"
        path.write_text(block.body, encoding="utf-8")
        _run([sys.executable, str(path)], block, folder, env)
    else:
        check_syntax(block)
    return "ran"


def run_page(page: str, *, slow: bool) -> Report:
    report = Report(page)
    with tempfile.TemporaryDirectory(prefix="docs-test-") as tmp:
        folder = Path(tmp)
        env = scratch_env(folder)
        for block in blocks(page):
            if block.marker == "skip":
                assert block.arg, f"{block.where}: a skip needs a reason"
                report.skipped.append((block, block.arg.strip("() ")))
                continue
            if block.marker == "slow" and not slow:
                report.skipped.append((block, "slow: runs with `pytest -m slow`"))
                continue
            started = time.monotonic()
            kind = run_block(block, folder, env)
            report.seconds[block.index] = time.monotonic() - started
            (report.files if kind == "file" else report.ran).append(block)
    return report


# -- one test per block ------------------------------------------------------------------------------------------

RUNNABLE = SHELL | PYTHON | {"yaml", "yml", "json", "toml"}


class PageRun:
    """One page's scratch folder, shared by the tests of its blocks, which run in page order."""

    def __init__(self, page: str, folder: Path):
        self.page, self.folder, self.env = page, folder, scratch_env(folder)
        self.report = Report(page)
        self.done: set[int] = set()
        self.failed: Block | None = None

    def run(self, block: Block) -> None:
        started = time.monotonic()
        try:
            kind = run_block(block, self.folder, self.env)
        except BaseException:
            self.failed = block
            raise
        finally:
            self.done.add(block.index)
        self.report.seconds[block.index] = time.monotonic() - started
        (self.report.files if kind == "file" else self.report.ran).append(block)

    def run_up_to(self, block: Block) -> None:
        """Run the earlier blocks this one builds on that no test ran yet (after a ``-k`` selection, or for a
        slow block under ``-m slow``); slow blocks only before a slow block, as the default run never runs them."""
        if self.failed is not None:
            pytest.skip(f"not run: {self.failed.where} failed before it, and this page's blocks build on each other")
        for earlier in blocks(self.page)[:block.index - 1]:
            if earlier.index in self.done or earlier.marker == "skip" or (earlier.marker == "slow" != block.marker):
                continue
            self.run(earlier)

    def text(self) -> str:
        report = Report(self.page, self.report.ran, [], self.report.files, self.report.seconds)
        for b in blocks(self.page):
            if b.marker == "skip":
                report.skipped.append((b, b.arg.strip("() ")))
            elif b.marker == "slow" and b.index not in self.done:
                report.skipped.append((b, "slow: runs with `pytest -m slow`"))
        return report.text()


def _block_params() -> list:
    params = []
    for page in PAGES:
        for b in blocks(page):
            if b.marker == "skip" or (b.marker != "file" and b.lang not in RUNNABLE):
                continue                     # skipped (reported at the end) or text: nothing to run
            params.append(pytest.param(page, b.index, id=f"{page}:{b.line}:{b.lang}",
                                       marks=[pytest.mark.slow] if b.marker == "slow" else []))
    return params


@pytest.fixture(scope="module")
def page_runs():
    runs: dict[str, PageRun] = {}
    with tempfile.TemporaryDirectory(prefix="docs-test-") as tmp:
        def get(page: str) -> PageRun:
            if page not in runs:
                folder = Path(tmp) / f"page-{len(runs)}"
                folder.mkdir()
                runs[page] = PageRun(page, folder)
            return runs[page]
        yield get


@pytest.mark.parametrize("page, index", _block_params())
def test_block_runs(page, index, page_runs, request):
    run = page_runs(page)
    block = blocks(page)[index - 1]
    run.run_up_to(block)
    try:
        run.run(block)
    finally:
        if not hasattr(request.config, "docs_blocks_report"):      # printed at the end by tests/conftest.py
            request.config.docs_blocks_report = {}
        request.config.docs_blocks_report[page] = run.text()


def test_markers_are_well_formed():
    for page in PAGES:
        text = (ROOT / page).read_text(encoding="utf-8")
        for m in re.finditer(r"<!--\s*docs-test\b.*?-->", text, re.S):
            assert MARKER.fullmatch(m.group(0)), f"{page}: unknown docs-test marker {m.group(0)}"
            if m.group(0).split(":", 1)[1].strip().startswith("skip"):
                assert "(" in m.group(0), f"{page}: a skip needs a reason in parentheses: {m.group(0)}"


if __name__ == "__main__":          # python tests/test_docs.py [PAGE ...]: the table, without pytest's capture
    for name in [a for a in sys.argv[1:] if not a.startswith("--")] or PAGES:
        try:
            print(run_page(name, slow="--slow" in sys.argv).text())
        except BaseException as exc:   # noqa: BLE001 - pytest.fail raises an OutcomeException
            print(f"{name}: FAILED\n{exc}")
