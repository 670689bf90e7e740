"""``tether view``: serve the store's runs and evals as web pages on 127.0.0.1."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ._common import console, user_errors

HELP = """Serve the store's runs and evals as web pages on 127.0.0.1 (read-only).

The index lists evals (each opens the same report `tether report` writes),
runs (filter by model, case, kind; tick two to diff them) and the run metrics
of `tether stats`. --port 0 picks a free port; the URL is printed. Ctrl-C stops.

Examples:

  tether view

  tether view --port 0 --store .tether/tether.db
"""


def view_command(
    port: Annotated[int, typer.Option(min=0, max=65535, help="port on 127.0.0.1 (0: any free port)")] = 8765,
    store: Annotated[Optional[str], typer.Option(help="the run store: a file or a postgresql:// URL (default $TETHER_STORE or .tether/tether.db)")] = None,
) -> None:
    from ..report.html.server import make_server
    from ..store import open_store

    from ..store.opening import NoStore, no_store_yet

    with user_errors():
        try:
            db = open_store(store, read_only=True)
        except NoStore as exc:
            console.print(f"tether view: {no_store_yet(exc.path, 'runs to show')}", highlight=False, soft_wrap=True)
            return
        try:
            server = make_server(db, port)
        except OSError as exc:
            from ..errors import UsageError
            raise UsageError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    host, bound = server.server_address[:2]
    console.print(f"tether view: http://{host}:{bound}/ (store {db.where}; Ctrl-C stops)", highlight=False,
                  soft_wrap=True)
    import sys
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
