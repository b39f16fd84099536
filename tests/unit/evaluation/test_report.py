"""`s2s evaluate --report`: a self-contained HTML page, and the cross-attention it draws."""

import base64
import hashlib
import json
import sys
from collections.abc import Callable
from html.parser import HTMLParser
from itertools import pairwise
from pathlib import Path
from typing import get_args

import pytest
import torch
from torch.testing import assert_close

from seq2seq.errors import EvaluateError
from seq2seq.evaluation.figure import new_figure
from seq2seq.evaluation.metric_options import MetricOptions
from seq2seq.evaluation.reader_metrics import ReaderMetricOptions
from seq2seq.evaluation.report import BODIES, length_buckets
from seq2seq.special import BOS, PAD
from seq2seq.translate.cross_attention import cross_attention
from seq2seq.translate.placement import Placement
from seq2seq.translate.request import Request
from seq2seq.translate.translator import Translator
from tests.conftest import TrainedRun, make_model, random_ids
from tests.helpers import run_cli

VOID = {"meta", "img", "br", "hr", "link", "input"}


class StrictPage(HTMLParser):
    """Checks that every element is closed in order, and collects src/href attribute values."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.errors: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.links += [v or "" for k, v in attrs if k in ("src", "href")]
        if tag not in VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open.pop() != tag:
            self.errors.append(f"unexpected </{tag}>")


def parse(page: str) -> StrictPage:
    parser = StrictPage()
    parser.feed(page)
    parser.close()
    return parser


@pytest.fixture(scope="module")
def trained(trained_run: Callable[[str], TrainedRun]) -> tuple[Path, Path, Path]:
    """The shared "report" run: (run_dir, valid source, valid reference)."""
    report = trained_run("report")
    return report.run, report.data / "valid.src", report.data / "valid.tgt"


@pytest.fixture(scope="module")
def evaluated(trained, tmp_path_factory) -> tuple[Path, Path]:
    """`s2s evaluate RUN --src --ref --json --report`: (json file, report dir)."""
    run, src, ref = trained
    out = tmp_path_factory.mktemp("eval")
    args = ["evaluate", str(run), "--src", str(src), "--ref", str(ref), "--beam", "1"]
    result = run_cli(*args, "--json", str(out / "eval.json"), "--report", str(out / "report"))
    assert result.exit_code == 0, result.output
    return out / "eval.json", out / "report"


def test_report_is_valid_html_with_only_embedded_images(evaluated):
    page = (evaluated[1] / "index.html").read_text(encoding="utf-8")
    parser = parse(page)
    assert parser.errors == [] and parser.open == []
    assert parser.links and all(link.startswith("data:image/png;base64,") for link in parser.links)
    assert "http://" not in page and "https://" not in page
    png = base64.b64decode(parser.links[0].split(",", 1)[1])
    assert png.startswith(b"\x89PNG")
    for section in ("Scores", "Learning curves", "BLEU by length", "Sentences of", "Cross-attention"):
        assert section in page
    assert len(parser.links) >= 3  # learning curves, BLEU by length, at least one heatmap


def test_translate_mode_records_model_speed_and_hypotheses(trained, evaluated):
    run, src, _ = trained
    record = json.loads(evaluated[0].read_text())
    best = run / "checkpoints" / "best.pt"
    assert record["model"]["run_dir"] == str(run.resolve())
    assert record["model"]["checkpoint"]["sha256"] == hashlib.sha256(best.read_bytes()).hexdigest()
    assert record["decode"]["beam"] == 1 and record["decode"]["sentences"] == 20
    assert record["decode"]["sentences_per_second"] > 0 and record["decode"]["tokens_per_second"] > 0
    hyp = run / f"{src.name}.best.hyp"  # the documented default for --out
    assert record["systems"][0]["path"] == str(hyp.resolve())
    assert len(hyp.read_text(encoding="utf-8").split("\n")) == 21
    assert record["source"]["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()


def test_misaligned_references_fail_before_translating(trained, tmp_path):
    run, src, ref = trained
    short = write(tmp_path / "short.txt", ref.read_text(encoding="utf-8").splitlines()[:5])
    out = tmp_path / "hyp.txt"
    result = run_cli("evaluate", str(run), "--src", str(src), "--ref", str(short), "--out", str(out))
    assert result.exit_code == 2 and "has 20 lines" in result.stderr and "short.txt has 5" in result.stderr
    assert not out.exists()


def test_attention_map_is_target_by_source_and_rows_sum_to_1(trained):
    translator = Translator.load(trained[0], ["best"], Placement("cpu"))
    request = Request.of(translator.options())
    attention = translator.attention_map("red cat runs on the big tree", "TREE BIG THE ON RUNS CAT", request)
    rows, cols = attention.weights.shape
    assert (rows, cols) == (len(attention.target), len(attention.source))
    assert attention.source[-1] == "</s>" and attention.target[-1] == "</s>" and cols > 2
    assert_close(torch.from_numpy(attention.weights).sum(-1), torch.ones(rows))


def test_cross_attention_ignores_source_padding():
    model = make_model()
    src = random_ids(3, 8)
    src[1, 5:] = PAD
    src[2, 3:] = PAD
    tgt_in = torch.cat([torch.full((3, 1), BOS), random_ids(3, 5, seed=1)], dim=1)
    weights = cross_attention(model, src, tgt_in)  # (B, T, S)
    assert weights.shape == (3, 6, 8)
    real = (src != PAD)[:, None, :].expand_as(weights)
    assert torch.all(weights[~real] == 0)
    assert_close(weights.sum(-1), torch.ones(3, 6))
    alone = cross_attention(model, src[2:, :3], tgt_in[2:])
    assert_close(weights[2:, :, :3], alone, atol=1e-5, rtol=1e-4)


def test_asking_for_attention_changes_no_logits():
    model = make_model()
    src, tgt_in = random_ids(2, 7), random_ids(2, 5, seed=2)
    memory = model.encode(src)
    sink: list[torch.Tensor] = []
    assert_close(model.decode(tgt_in, memory), model.decode(tgt_in, memory, attn_sink=sink))
    assert len(sink) == len(model.decoder)


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def test_report_from_hypotheses_alone_compares_systems(tmp_path):
    refs = [f"the {w} cat sat on the mat {i}" for i, w in enumerate(["red", "big", "small"] * 10)]
    ref = write(tmp_path / "ref.txt", refs)
    worse = write(tmp_path / "worse.txt", [r.replace("cat", "dog") for r in refs])
    args = ["evaluate", "--hyp", str(ref), "--hyp", str(worse), "--ref", str(ref), "--bootstrap", "50"]
    result = run_cli(*args, "--report", str(tmp_path / "report"))
    assert result.exit_code == 0, result.output
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    parser = parse(page)
    assert parser.errors == [] and all(link.startswith("data:") for link in parser.links)
    assert "paired bootstrap" in page and "Cross-attention" not in page and "Learning curves" not in page


def test_missing_matplotlib_is_a_user_error(tmp_path, monkeypatch):
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(EvaluateError, match="pip install"):
        new_figure(1, 1)
    ref = write(tmp_path / "ref.txt", ["a b c d"])
    result = run_cli("evaluate", "--hyp", str(ref), "--ref", str(ref), "--report", str(tmp_path))
    assert result.exit_code == 2 and "s2s[report]" in result.stderr


def test_every_kind_of_scoring_options_has_a_report_body():
    """The report chooses what it shows below the scores by the options' type; the options know
    nothing of the report."""
    assert set(BODIES) == {MetricOptions, *get_args(ReaderMetricOptions)}


@pytest.mark.parametrize("lengths", [[3] * 10, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [5, 1, 1, 1, 2, 40, 7, 7]])
def test_length_buckets_split_every_line_once_in_order(lengths):
    buckets = length_buckets(lengths)
    assert sorted(i for b in buckets for i in b.lines) == list(range(len(lengths)))
    assert all(a.high < b.low for a, b in pairwise(buckets))
    assert all(b.low <= lengths[i] <= b.high for b in buckets for i in b.lines)
