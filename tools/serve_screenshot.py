"""The README's screenshot of the `s2s serve` page: a real server, headless Chromium, a few sentences.

    python tools/serve_screenshot.py runs/multi30k_de_en docs/serve.png

Needs playwright (`pip install -e '.[dev]'`) and Chromium (`apt-get install chromium`); the server
listens on 127.0.0.1 on a free port and is stopped with SIGTERM at the end.
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

from seq2seq.errors import Seq2SeqError
from seq2seq.files import check_outputs
from seq2seq.run.layout import RunDir
from seq2seq.run.parts import run_parts

SENTENCES = [
    "Ein Mann fährt mit dem Fahrrad über eine Brücke.",
    "Zwei Hunde spielen im Schnee.",
    "Eine Frau verkauft Obst auf einem Markt.",
]
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    args = parser.parse_args(argv)
    try:  # the screenshot is never one of the run's files, nor in its folders
        check_outputs({"OUTPUT": args.output}, run_parts(RunDir(args.run_dir)))
    except Seq2SeqError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    command = [sys.executable, "-m", "seq2seq", "serve", str(args.run_dir), "--port", "0", "--device", "cpu"]
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert server.stderr is not None
    url = next(found.group(1) for line in server.stderr if (found := re.search(r"on (http://\S+)", line)))
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1000, "height": 800}, device_scale_factor=1)
            page.goto(url)
            expect(page.locator("#languages")).not_to_be_empty()
            page.get_by_label("Source text").fill("\n".join(SENTENCES))
            page.get_by_role("button", name="Translate").click()
            expect(page.locator("#output > li")).to_have_count(len(SENTENCES))
            page.get_by_role("button", name="Show the cross-attention of line 2").click()
            expect(page.get_by_role("img", name="Cross-attention of line 2")).to_be_visible()
            page.screenshot(path=args.output, full_page=True)
            browser.close()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
    print(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
