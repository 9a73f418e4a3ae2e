"""Serve the browser edition (``build/lite``, made by ``make lite``) for a try: ``make serve-lite``.

Only on loopback (127.0.0.1: nobody else on the network sees it), at a port the system says is
free (a fixed 8000 may be another site's on a shared machine), with the address printed. The
site needs nothing else: every file is in ``build/lite``. Ctrl-C stops it.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "build" / "lite"
# Types the browser insists on (a module script, WebAssembly streaming), whatever the system's table says.
TYPES = {
    ".wasm": "application/wasm",
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".json": "application/json",
}


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Static files with the right types, and no line per request (the address is what matters)."""

    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **TYPES}  # noqa: RUF012

    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(site: Path, port: int = 0) -> None:
    """Serve ``site`` on 127.0.0.1 until Ctrl-C, printing its address once it listens."""
    handler = functools.partial(SiteHandler, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        address = f"http://127.0.0.1:{server.server_port}/"
        print(f"lite：在 {address} 提供 {site}（只有这台机器能访问；Ctrl-C 停止）", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            print("lite：已停止", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=SITE, help="the built site (default: build/lite)")
    parser.add_argument("--port", type=int, default=0, help="a port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args()
    site: Path = args.site
    if not (site / "index.html").is_file():
        print(f"lite: no site in {site}: build it first with make lite", file=sys.stderr)
        return 2
    try:
        serve(site, args.port)
    except OSError as error:
        print(f"lite: cannot listen on 127.0.0.1:{args.port}: {error.strerror or error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
