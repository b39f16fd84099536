"""`s2s evaluate` on given hypotheses: sacreBLEU scores, signatures, file checks, paired bootstrap."""

import hashlib
import json
import random
from pathlib import Path

import pytest
import sacrebleu
from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.significance import PairedTest

from seq2seq.evaluation.metrics import (
    MetricOptions,
    TextFile,
    corpus_scores,
    paired_bootstrap,
    read_references,
)
from seq2seq.evaluation.record import evaluate_files
from tests.conftest import WORDS
from tests.helpers import run_cli


def sentences(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9))) for _ in range(count)]


def perturb(lines: list[str], rate: float, seed: int) -> list[str]:
    """Replace about `rate` of the words, so scores drop in proportion."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) if rng.random() < rate else w for w in s.split()) for s in lines]


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def refs() -> list[str]:
    return sentences(60, seed=1)


def test_identical_hypotheses_score_100(tmp_path, refs):
    ref = write(tmp_path / "ref.txt", refs)
    result = evaluate_files([ref], read_references([ref]), MetricOptions())
    scores = result.systems[0].scores
    assert scores["bleu"].score == pytest.approx(100.0)
    assert scores["chrf"].score == pytest.approx(100.0)
    assert scores["ter"].score == pytest.approx(0.0)


@pytest.mark.parametrize(
    "options", [MetricOptions(), MetricOptions(tokenize="intl", lowercase=True, chrf_plus=True)]
)
def test_scores_match_sacrebleu_called_directly(refs, options):
    hyps = perturb(refs, 0.3, seed=2)
    hyps[0] = hyps[0].upper()
    second = perturb(refs, 0.1, seed=3)
    ours = corpus_scores(hyps, [refs, second], options)
    bleu = sacrebleu.corpus_bleu(hyps, [refs, second], tokenize=options.tokenize, lowercase=options.lowercase)
    chrf = CHRF(word_order=2 if options.chrf_plus else 0, lowercase=options.lowercase).corpus_score(
        hyps, [refs, second]
    )
    ter = sacrebleu.corpus_ter(hyps, [refs, second])
    assert ours["bleu"].score == pytest.approx(bleu.score)
    assert ours["chrf"].score == pytest.approx(chrf.score)
    assert ours["ter"].score == pytest.approx(ter.score)
    assert 0 < bleu.score < 100


def test_json_holds_scores_signatures_and_checksums(tmp_path, refs):
    ref, hyp = write(tmp_path / "ref.txt", refs), write(tmp_path / "hyp.txt", perturb(refs, 0.2, 4))
    out = tmp_path / "eval.json"
    args = ["--hyp", str(hyp), "--ref", str(ref), "--json", str(out), "--tokenize", "intl"]
    result = run_cli("evaluate", *args)
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text())
    scores = record["systems"][0]["scores"]
    for key, metric in {"bleu": BLEU(tokenize="intl"), "chrf": CHRF(), "ter": TER()}.items():
        metric.corpus_score(hyp.read_text().splitlines(), [refs])
        assert scores[key]["signature"] == str(metric.get_signature())
        assert scores[key]["signature"] in result.stdout
    bleu = scores["bleu"]
    assert "tok:intl" in bleu["signature"]
    assert record["systems"][0]["sha256"] == hashlib.sha256(hyp.read_bytes()).hexdigest()
    assert record["references"][0]["sha256"] == hashlib.sha256(ref.read_bytes()).hexdigest()
    assert f"{bleu['score']:.2f}" in result.stdout
    assert record["model"] is None and record["decode"] is None and record["bootstrap"] is None


def test_mismatched_line_counts_exit_2_naming_both_files(tmp_path, refs):
    ref, hyp = write(tmp_path / "ref.txt", refs), write(tmp_path / "hyp.txt", refs[:-3])
    result = run_cli("evaluate", "--hyp", str(hyp), "--ref", str(ref))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")
    assert "hyp.txt has 57 lines" in result.stderr and "ref.txt has 60" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--tokenize", "nope"], "13a"),
        ([], "--hyp"),
        (["--out", "x.txt"], "--out"),
        (["no-such-run"], "run directory not found: no-such-run"),
    ],
)
def test_bad_options_exit_2(tmp_path, refs, args, message):
    ref = write(tmp_path / "ref.txt", refs)
    hyp_args = ["--hyp", str(ref)] if args else []
    result = run_cli("evaluate", *hyp_args, "--ref", str(ref), *args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_paired_bootstrap_of_a_system_against_itself_gives_p_1(refs):
    hyps = perturb(refs, 0.3, seed=5)
    test = paired_bootstrap([hyps, hyps], [refs], MetricOptions(), samples=200)
    for key, (baseline, same) in test.results.items():
        assert baseline.p_value is None
        assert same.p_value == pytest.approx(1.0), key
        assert same.score == baseline.score and same.ci > 0
        assert "bs:200" in test.signatures[key]


def test_paired_bootstrap_is_sacrebleus_and_finds_a_real_difference(refs):
    good, bad = perturb(refs, 0.1, seed=6), perturb(refs, 0.6, seed=7)
    ours = paired_bootstrap([good, bad], [refs], MetricOptions(), samples=200).results["bleu"]
    metric = BLEU(references=[refs])
    _, theirs = PairedTest([("good", good), ("bad", bad)], {"BLEU": metric}, None, "bs", n_samples=200)()
    assert ours[1].p_value == theirs["BLEU"][1].p_value < 0.05
    assert ours[1].mean == pytest.approx(theirs["BLEU"][1].mean)
    assert ours[0].score - ours[0].ci > ours[1].score + ours[1].ci  # confidence intervals apart


def test_comparing_systems_prints_the_baseline_and_p_values(tmp_path, refs):
    ref = write(tmp_path / "ref.txt", refs)
    a, b = write(tmp_path / "a.txt", perturb(refs, 0.1, 8)), write(tmp_path / "b.txt", perturb(refs, 0.5, 9))
    out = tmp_path / "eval.json"
    args = ["evaluate", "--hyp", str(a), "--hyp", str(b), "--ref", str(ref), "--bootstrap", "100"]
    result = run_cli(*args, "--json", str(out))
    assert result.exit_code == 0, result.output
    assert "baseline: a.txt" in result.stdout and "p=" in result.stdout
    record = json.loads(out.read_text())
    assert record["bootstrap"]["baseline"] == "a.txt"
    assert [r["p_value"] is None for r in record["bootstrap"]["results"]["bleu"]] == [True, False]


def test_a_file_is_read_once_with_its_checksum(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes("é\nb\r\n".encode())
    text = TextFile.read(path)
    assert text.lines == ["é", "b"] and text.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
