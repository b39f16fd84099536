"""The page of `s2s serve` in a real headless Chromium against a real server: type, translate, read."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import cli_translate
from tests.servers import ServerProcess

sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright: pip install -e '.[dev]'")

pytestmark = pytest.mark.xdist_group("browser")  # one server and one Chromium for the module

# a closed network makes Chromium wait on its background connections
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


def chromium() -> str | None:
    """Chromium from $S2S_CHROMIUM or the PATH (Debian: apt-get install chromium)."""
    names = (os.environ.get("S2S_CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome")
    return next((path for path in map(shutil.which, filter(None, names)) if path), None)


@pytest.fixture(scope="module")
def server(served_run: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(served_run)
    yield process
    assert process.stop(signal.SIGINT) == 0, "".join(process.log)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One headless Chromium for the module's pages (Playwright's sync API runs one at a time)."""
    executable = chromium()
    if executable is None:
        pytest.skip("no Chromium to drive: apt-get install chromium, or set S2S_CHROMIUM=/path/to/chrome")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@contextmanager
def served_page(browser: object, url: str) -> Iterator[tuple[object, list[str]]]:
    """The page served at `url`, and a list collecting what went wrong: console errors, and requests
    to anywhere but the server."""
    problems: list[str] = []
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("request", lambda r: None if r.url.startswith(url) else problems.append(f"request to {r.url}"))
    page.goto(url)
    yield page, problems
    page.close()


@pytest.fixture(scope="module")
def browser_page(browser: object, server: ServerProcess) -> Iterator[tuple[object, list[str]]]:
    with served_page(browser, server.url) as found:
        yield found


def test_the_page_translates_what_is_typed_as_s2s_translate_does(browser_page, served_run, tmp_path):
    page, problems = browser_page
    expect = sync_api.expect
    expect(page.locator("#languages")).to_have_text("src → tgt")
    expect(page.locator("#run")).to_have_text(served_run.name)
    lines = ["red cat runs", "the big dog sleeps"]
    page.get_by_label("Source text").fill("\n".join(lines))
    page.get_by_role("button", name="Translate").click()
    translations = page.locator("#output > li > .translation")
    expect(translations).to_have_count(2)
    assert translations.all_inner_texts() == cli_translate(served_run, lines)
    best = page.locator("#output > li").first
    expect(best.locator(".nbest > li")).to_have_count(2)  # the beam, 2
    expected = cli_translate(served_run, lines[:1], "--nbest", "2")[0].split("\t")
    assert best.locator(".nbest > li > span:first-child").all_inner_texts() == expected[0::2]
    shown = best.locator(".nbest .score").all_inner_texts()
    assert [score == "blank" for score in shown] == [score == "blank" for score in expected[1::2]]
    numbers = [(float(a), float(b)) for a, b in zip(shown, expected[1::2], strict=True) if a != "blank"]
    assert all(a == pytest.approx(b, abs=2e-3) for a, b in numbers)
    page.screenshot(path=tmp_path / "serve.png", full_page=True)
    assert (tmp_path / "serve.png").stat().st_size > 10_000
    assert problems == []


def test_ctrl_enter_translates_and_the_attention_of_a_line_is_drawn(browser_page, served_run):
    page, problems = browser_page
    source = page.get_by_label("Source text")
    source.fill("blue bird eats")
    source.press("Control+Enter")
    expect = sync_api.expect
    expect(page.locator("#output > li > .translation")).to_have_text(
        cli_translate(served_run, ["blue bird eats"])
    )
    page.get_by_role("button", name="Show the cross-attention of line 1").click()
    heatmap = page.get_by_role("img", name="Cross-attention of line 1")
    expect(heatmap).to_be_visible()
    rows, columns = heatmap.get_attribute("aria-label").split(": ")[1].split(" by ")
    assert heatmap.locator("rect").count() == int(rows.split()[0]) * int(columns.split()[0]) > 0
    assert problems == []


def test_the_prefix_box_starts_the_translations_as_translate_prefix_does(
    browser, server, served_run, tmp_path
):
    with served_page(browser, server.url) as (page, problems):  # its own page: no other test's state
        prefix_round_trip(page, problems, served_run, tmp_path)


def prefix_round_trip(page: Any, problems: list[str], served_run: Path, tmp_path: Path) -> None:
    """Target prefixes through the page's box, as `s2s translate --prefix` gives them."""
    sync_api.expect(page.locator("#run")).to_have_text(served_run.name)  # /info has set the page up
    lines, prefixes = ["red cat runs", "the big dog sleeps", "blue bird eats"], ["the red", ""]
    page.get_by_label("Source text").fill("\n".join(lines))
    page.get_by_text("Start the translations with given words").click()
    page.get_by_label("Target prefixes").fill("\n".join(prefixes))  # the last line gets none
    page.get_by_role("button", name="Translate").click()
    translations = page.locator("#output > li > .translation")
    expect = sync_api.expect
    expect(translations.first).to_contain_text("the red")
    given = tmp_path / "prefixes.txt"
    given.write_text("the red\n\n\n", encoding="utf-8")
    # text_content: the page keeps what the model wrote, spaces included (inner text collapses them)
    assert translations.all_text_contents() == cli_translate(served_run, lines, "--prefix", str(given))
    page.get_by_label("Target prefixes").fill("\n".join(["a"] * 4))
    page.get_by_role("button", name="Translate").click()
    expect(page.get_by_role("alert")).to_contain_text("4 target prefixes for 3 source lines")
    page.get_by_label("Target prefixes").fill("")
    assert problems == []


def test_the_markup_choice_puts_the_tags_back_as_translate_markup_does(browser, server, served_run):
    with served_page(browser, server.url) as (page, problems):  # its own page: the shared one keeps its state
        markup_round_trip(page, problems, served_run)


def markup_round_trip(page: Any, problems: list[str], served_run: Path) -> None:
    """Lines with tags through the page's Markup choice, as `s2s translate --markup html` gives them."""
    lines = ["<b>red</b> cat &amp; runs", "the <i>big dog</i> sleeps<br/>"]
    expected = cli_translate(served_run, lines, "--markup", "html")
    page.get_by_label("Source text").fill("\n".join(lines))
    page.get_by_label("Markup").select_option("html")
    page.get_by_role("button", name="Translate").click()
    translations = page.locator("#output > li > .translation")
    sync_api.expect(translations).to_have_text(expected)
    assert translations.all_text_contents() == expected
    assert problems == []


def test_errors_are_shown_and_every_control_has_a_label(browser_page):
    page, problems = browser_page
    labels = ("Source text (src), one sentence per line", "Beam", "Alternatives")
    labels += ("Target prefixes, one per source line (an empty line: none)",)
    for label in labels:
        assert page.get_by_label(label, exact=True).count() == 1, label
    page.get_by_label("Source text").fill("\n".join(["red"] * 101))
    page.get_by_role("button", name="Translate").click()
    sync_api.expect(page.get_by_role("alert")).to_contain_text("101 lines; at most 100 per request")
    assert len(problems) == 1 and "status of 413" in problems[0]  # Chromium logs the refused request
    problems.clear()


def test_a_multilingual_run_s_page_translates_into_the_chosen_language(browser, multilingual_run):
    server = ServerProcess(multilingual_run.run)
    try:
        with served_page(browser, server.url) as (page, problems):
            expect = sync_api.expect
            expect(page.locator("#languages")).to_have_text("into de, en")
            page.get_by_label("Into").select_option("de")
            lines = ["red cat runs", "the big dog sleeps"]
            page.get_by_label("Source text").fill("\n".join(lines))
            page.get_by_role("button", name="Translate").click()
            translations = page.locator("#output > li > .translation")
            expect(translations).to_have_count(2)
            assert translations.all_inner_texts() == cli_translate(multilingual_run.run, lines, "--to", "de")
            page.get_by_role("button", name="Show the cross-attention of line 1").click()
            heatmap = page.get_by_role("img", name="Cross-attention of line 1")
            expect(heatmap).to_be_visible()
            assert heatmap.locator("text").first.text_content() == "<2de>"  # the source as translated
            assert problems == []
    finally:
        assert server.stop(signal.SIGINT) == 0, "".join(server.log)
