"""Render the notebooks' diagrams (pi_course/notebook/diagrams.py) to the PNGs an untrusted notebook shows.

JupyterLab draws neither inline SVG nor ``image/svg+xml`` from an untrusted notebook, but it does
draw PNG. Run this after changing a diagram (``tests/unit/test_notebook_helpers.py`` fails until
you do): each SVG is drawn by Chromium at twice its size and saved with the SVG's SHA-256 in a
PNG text chunk. Needs the [dev] extra (playwright) and Debian's chromium.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import sync_playwright

from pi_course.notebook.diagrams import IMAGES, overview, sse_layers, with_source_digest

CHROMIUM = Path("/usr/bin/chromium")


def main() -> None:
    IMAGES.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            for diagram in (overview(), sse_layers()):
                page = browser.new_page(
                    device_scale_factor=2, viewport={"width": diagram.width, "height": 100}
                )
                page.set_content(f'<body style="margin:0">{diagram.svg}</body>')
                png = page.locator("svg").screenshot(type="png", omit_background=True)  # transparent
                diagram.png_path.write_bytes(with_source_digest(png, diagram.svg_digest))
                print(f"wrote {diagram.png_path.relative_to(Path.cwd())} ({len(png)} bytes)")
                page.close()
        finally:
            browser.close()


if __name__ == "__main__":
    main()
