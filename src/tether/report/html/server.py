"""``tether view``: the store's runs and evals as web pages, on 127.0.0.1.

Routes: ``/`` (evals, runs with filters, run metrics), ``/eval/ID`` (the
eval's report: the same pages as ``tether report``), ``/run/ID`` (one run's
transcript), ``/diff?run=A&run=B`` (two runs side by side). Read-only; the
standard library's threading HTTP server, bound to loopback only.
"""

from __future__ import annotations

import datetime as dt
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

from ...errors import UsageError
from ...store.opening import DamagedRun
from .. import metrics
from .render import NAV_REPORT, csp, link, render_index, render_report, render_run, render_trajectory_diff

NAV = [("/", "Runs")]


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def _rates_only(results: dict) -> dict:
    """What the evals list reads of a results document (kept per viewer: not the cases)."""
    keep = ("model", "guards", "trials", "errors", "dimensions")
    return {"suite": results.get("suite"),
            "runs": [{k: r.get(k) for k in keep} for r in results.get("runs") or [] if isinstance(r, dict)]}


class Viewer:
    """Renders pages from one store."""

    def __init__(self, store: Any):
        self.store = store
        self._reports: dict[tuple[str, float], str] = {}
        self._results: dict[tuple[str, float], dict] = {}     # (eval, updated) -> its rates (evals list)
        self._lock = threading.Lock()

    PAGE = 100

    def index(self, query: dict[str, str]) -> str:
        """One page of runs (keyset: ``before=RUN`` shows the runs older than RUN), the
        metrics of every run matching the filters (aggregate queries) and the newest evals."""
        filters = {"model": query.get("model") or None, "case_id": query.get("case") or None,
                   "kind": query.get("kind") or None, "eval_id": query.get("eval") or None,
                   "q": query.get("q", "").strip() or None}
        before = self.store.run_cursor(query["before"]) if query.get("before") else None
        runs = self.store.list_runs(self.PAGE + 1, before=before, **filters)
        older = runs[self.PAGE - 1]["run_id"] if len(runs) > self.PAGE else None
        runs = runs[:self.PAGE]
        stats = metrics.compute(self.store, **filters)
        evals, evals_page = self._evals(query)
        shown = [r | {"when": _when(r["updated"])} for r in runs]
        kept = {k: v for k, v in query.items() if v and k not in ("before", "evals_before")}
        page = {"total": stats["runs"] + stats["errors"] + stats["running"],
                "older": "/?" + urlencode({**kept, "before": older}) if older else None,
                "newer": "/?" + urlencode(kept) if before else None}
        return render_index(evals=evals, runs=shown, stats=stats, store=self.store.where, nav=NAV,
                            query=kept, page=page, evals_page=evals_page)

    EVALS_PAGE = 20

    def _evals(self, query: dict[str, str]) -> tuple[list[dict], dict]:
        """One page of evals (keyset: ``evals_before=EVAL`` shows the older ones), each with
        its subjects, guard settings, rates per dimension and errors: two queries a page."""
        from ..overview import eval_rows

        before = query.get("evals_before") or None
        found = self.store.list_evals(self.EVALS_PAGE + 1, before=before)
        older = found[self.EVALS_PAGE - 1]["eval_id"] if len(found) > self.EVALS_PAGE else None
        found = found[:self.EVALS_PAGE]
        # a finished eval's results never change: its rates are read once per viewer
        with self._lock:
            known = {e["eval_id"]: self._results[(e["eval_id"], e["updated"])] for e in found
                     if (e["eval_id"], e["updated"]) in self._results}
        seen = self.store.eval_overview([e["eval_id"] for e in found],
                                        results=[e["eval_id"] for e in found if e["eval_id"] not in known])
        with self._lock:
            for e in found:
                if e["eval_id"] in known:
                    seen[e["eval_id"]]["results"] = known[e["eval_id"]]
                elif e["status"] == "finished" and seen[e["eval_id"]]["results"] is not None:
                    self._results[(e["eval_id"], e["updated"])] = _rates_only(seen[e["eval_id"]]["results"])
        rows = eval_rows(found, seen)
        evals = [r | {"eval_id": r["eval"], "has_results": r["status"] == "finished"} for r in rows]
        kept = {k: v for k, v in query.items() if v and k != "evals_before"}
        return evals, {"older": "/?" + urlencode({**kept, "evals_before": older}) + "#evals" if older else None,
                       "newer": "/?" + urlencode(kept) + "#evals" if before else None}

    def eval_report(self, eval_id: str) -> str:
        from ...evals.results import Results
        from .data import build_report

        found = self.store.get_eval(eval_id)
        if found is None or not found.get("results"):
            raise LookupError(f"no finished eval {eval_id!r} in {self.store.where}")
        key = (eval_id, found["updated"])
        with self._lock:
            if key not in self._reports:
                results = Results.model_validate(found["results"])
                report = build_report(results, store=self.store)
                checkpoints: dict = {}          # shown on each run's own page (/run/ID)
                self._reports[key] = render_report(report, source=f"store {self.store.where}",
                                                   nav=NAV + NAV_REPORT, checkpoints=checkpoints, run_links=True)
            return self._reports[key]

    def _checkpoints(self, run_id: str) -> dict | None:
        n = self.store.checkpoint_count(run_id)
        if not n:
            return None
        last = self.store.latest_checkpoint(run_id)
        return {"count": n, "last": {"step": last["step"], "phase": last["phase"]} if last else None}

    def run(self, run_id: str) -> str:
        from ...store.export import load_run

        try:
            t = load_run(self.store, run_id)
        except DamagedRun:
            raise
        except UsageError as exc:
            raise LookupError(str(exc)) from None
        row = self.store.get_run(run_id)
        crumb = [link("/", "runs"), {"text": " › "}]
        if row and row.get("eval_id"):
            crumb += [link("/eval/" + quote(str(row["eval_id"]), safe=""), f"eval {row['eval_id']}"), {"text": " › run"}]
        else:
            crumb += [{"text": run_id}]
        return render_run(t, nav=NAV, checkpoints=self._checkpoints(run_id), crumb=crumb)

    def diff(self, run_ids: list[str]) -> str:
        from ...store.export import load_run

        if len(run_ids) != 2:
            raise LookupError("tick exactly two runs to diff (/diff?run=A&run=B)")
        try:
            a, b = (load_run(self.store, r) for r in run_ids)
        except UsageError as exc:
            raise LookupError(str(exc)) from None
        return render_trajectory_diff(a, b, nav=NAV)


def make_server(store: Any, port: int = 0, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    viewer = Viewer(store)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:   # quiet
            return None

        def do_GET(self) -> None:   # noqa: N802
            port = self.server.server_address[1]
            if (self.headers.get("Host") or "").strip().lower() not in (f"127.0.0.1:{port}", f"localhost:{port}"):
                # DNS rebinding: a page of another site, its name resolved to 127.0.0.1, must read nothing
                self._send(421, _message_page("wrong host", f"this server answers http://127.0.0.1:{port}/ only"))
                return
            parts = urlsplit(self.path)
            path = unquote(parts.path)
            query = parse_qs(parts.query)
            try:
                if path in ("/", "/index.html"):
                    body = viewer.index({k: v[0] for k, v in query.items()})
                elif path.startswith("/eval/"):
                    body = viewer.eval_report(path[len("/eval/"):])
                elif path.startswith("/run/"):
                    body = viewer.run(path[len("/run/"):])
                elif path == "/diff":
                    body = viewer.diff(query.get("run", []))
                elif path == "/favicon.ico":
                    self.send_response(204)
                    self.end_headers()
                    return
                else:
                    raise LookupError(f"no page {path}")
                self._send(200, body)
            except LookupError as exc:
                self._send(404, _message_page("not found", str(exc)))
            except DamagedRun as exc:            # this run's page only; every other page works
                self._send(500, _message_page("damaged run", str(exc)))

        def _send(self, status: int, body: str) -> None:
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Content-Security-Policy", csp())
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
            self.end_headers()
            self.wfile.write(data)

    return ThreadingHTTPServer((host, port), Handler)


def _message_page(title: str, text: str) -> str:
    from .render import env

    return env().from_string(_MESSAGE).render(title=title, text=text)


_MESSAGE = ('<!doctype html><html lang="en"><meta charset="utf-8"><title>{{ title }}</title>'
            '<body style="font-family:system-ui,sans-serif;padding:20px"><h1>{{ title }}</h1>'
            '<p>{{ text }}</p><p><a href="/">all runs</a></p></body></html>')
