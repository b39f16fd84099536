"""What each engine costs on one exported model: s2s, CTranslate2 and Hugging Face transformers.

Exports the run's best checkpoint to CTranslate2 (float32) and to Hugging Face (`s2s export --to
huggingface`) in a temporary directory; then each engine, in a fresh process per setting
(workers.py), loads the model (timed from the start of the import of its package to a model ready to
translate), translates 8 lines to warm up, then every line (timed), greedy and at each `--beams`. All
fp32, `--threads` threads for one batch at a time (transformers has no inter-batch threading; the same
arrangement for all three keeps the comparison about the engines):

- `s2s`: `Translator.translate`, its own batches (`decode.max_tokens`) and per-sentence limits;
- `ctranslate2`: s2s's CTranslate2 engine on the CTranslate2 export;
- `transformers`: `generate` on the Hugging Face export, sentences sorted by length in batches of
  `HF_BATCH`, each batch limited by its longest sentence's s2s limit (`generate` takes one limit per
  call), output in input order.

Reports load seconds, sentences/s, the ratio to s2s, peak RSS and BLEU (sacreBLEU, against `--ref`).
"""

from __future__ import annotations

import importlib.util
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

import sacrebleu
import torch

from benchmarks import workers
from benchmarks.options import Options

log = logging.getLogger(__name__)

ENGINES = ("s2s", "ctranslate2", "transformers")
WARMUP = 8
HF_BATCH = 32  # sentences per generate call


def missing(opts: Options) -> str | None:
    """Why this section cannot run here, or None."""
    for package, extra in (("ctranslate2", "ct2"), ("transformers", "hf"), ("safetensors", "hf")):
        if importlib.util.find_spec(package) is None:
            return f"{package} is not installed here (pip install 's2s[{extra}]')"
    return None


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """The worker's side (workers.py): load one engine, translate spec["src"], write the output."""
    torch.set_num_threads(spec["threads"])
    lines = Path(spec["src"]).read_text(encoding="utf-8").splitlines()
    if spec["limit"] > 0:
        lines = lines[: spec["limit"]]
    start = time.perf_counter()
    translate = {"s2s": _s2s, "ctranslate2": _ctranslate2, "transformers": _transformers}[spec["engine"]](
        spec
    )
    loaded = time.perf_counter() - start
    translate(lines[:WARMUP])
    start = time.perf_counter()
    out = translate(lines)
    seconds = time.perf_counter() - start
    Path(spec["out"]).write_text("".join(line + "\n" for line in out), encoding="utf-8")
    return {"load_seconds": loaded, "seconds": seconds}


def _s2s(spec: dict[str, Any]) -> Any:
    from seq2seq.translate.placement import Placement
    from seq2seq.translate.translator import Translator

    translator = Translator.load(spec["run_dir"], ["best"], Placement("cpu", "fp32"))
    translator.at_once = 1
    return _lines_of(translator, spec["beam"])


def _ctranslate2(spec: dict[str, Any]) -> Any:
    from seq2seq.ct2.runtime import CT2Translator, Threads
    from seq2seq.translate.placement import Placement

    return _lines_of(
        CT2Translator.load(Path(spec["ct2"]), Placement("cpu"), Threads(1, spec["threads"])), spec["beam"]
    )


def _lines_of(translator: Any, beam: int) -> Any:
    """`translate(lines) -> lines` with an s2s translator (its own decoder or its CTranslate2 engine)."""
    from seq2seq.translate.options import DecodeOverrides
    from seq2seq.translate.request import Request

    request = Request.of(translator.options(DecodeOverrides(beam=beam)), scores=False)

    def translate(lines: list[str]) -> list[str]:
        results = translator.translate(lines, request)
        return [t.texts[0] for t in results]

    return translate


def _transformers(spec: dict[str, Any]) -> Any:
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from seq2seq.decoding.length_limits import output_limits
    from seq2seq.decoding.settings import SearchSettings
    from seq2seq.run.layout import RunDir

    tokenizer = AutoTokenizer.from_pretrained(spec["hf"])
    model = AutoModelForSeq2SeqLM.from_pretrained(spec["hf"]).eval()
    decode = RunDir(spec["run_dir"]).load_config().decode
    settings = SearchSettings(beam=spec["beam"], max_len_a=decode.max_len_a, max_len_b=decode.max_len_b)

    def translate(lines: list[str]) -> list[str]:
        ids = [tokenizer(line)["input_ids"] for line in lines]
        order = sorted(range(len(lines)), key=lambda i: len(ids[i]))
        out = [""] * len(lines)
        for first in range(0, len(order), HF_BATCH):
            rows = order[first : first + HF_BATCH]
            batch = tokenizer([lines[i] for i in rows], return_tensors="pt", padding=True)
            lengths = torch.tensor([len(ids[i]) for i in rows])
            limit = int(output_limits(lengths, settings, model.config.max_position_embeddings).max())
            with torch.no_grad():
                made = model.generate(**batch, num_beams=spec["beam"], max_new_tokens=limit - 1)
            for i, text in zip(rows, tokenizer.batch_decode(made, skip_special_tokens=True), strict=True):
                out[i] = text
        return out

    return translate


def run(opts: Options, device: torch.device) -> dict[str, Any]:
    """Every engine at greedy and each of `--beams`, on the CPU (the device option does not apply)."""
    from seq2seq.ct2.conversion import export_ctranslate2
    from seq2seq.hf.export import export_huggingface

    assert opts.run_dir is not None  # options.parse insists
    threads = torch.get_num_threads()
    lines = Path(opts.src).read_text(encoding="utf-8").splitlines()
    count = len(lines[: opts.limit] if opts.limit > 0 else lines)
    refs = Path(opts.ref).read_text(encoding="utf-8").splitlines()[:count] if opts.ref else None
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        ct2, hf = Path(scratch) / "ct2", Path(scratch) / "hf"
        export_ctranslate2(Path(opts.run_dir), "best", ct2, None)
        export_huggingface(Path(opts.run_dir), "best", hf)
        base = {"run_dir": opts.run_dir, "src": opts.src, "limit": opts.limit, "threads": threads}
        base |= {"ct2": str(ct2), "hf": str(hf)}
        for beam in sorted({1, *opts.beams}):
            for engine in ENGINES:
                out = Path(scratch) / f"{engine}_{beam}.txt"
                log.info("%s beam %d", engine, beam)
                row: dict[str, Any] = {"engine": engine, "beam": beam}
                row |= workers.spawn("hf", base | {"engine": engine, "beam": beam, "out": str(out)})
                row["sentences_per_s"] = round(count / row["seconds"], 1)
                if refs is not None:
                    hyps = out.read_text(encoding="utf-8").splitlines()
                    row["bleu"] = round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2)
                rows.append(row)
    for row in rows:
        ours = next(r for r in rows if r["engine"] == "s2s" and r["beam"] == row["beam"])
        row["vs_s2s"] = row["sentences_per_s"] / ours["sentences_per_s"]
    return {"sentences": count, "threads": threads, "results": rows}


def report(section: dict[str, Any]) -> str:
    lines = [
        f"== hf: one model in s2s, CTranslate2 and transformers ({section['sentences']} sentences, fp32, "
        f"{section['threads']} threads, one batch at a time)",
        f"{'engine':<14}{'beam':>5}{'load s':>8}{'sent/s':>9}{'vs s2s':>8}{'peak RSS MiB':>13}{'BLEU':>7}",
    ]
    for row in section["results"]:
        lines.append(
            f"{row['engine']:<14}{row['beam']:>5}{row['load_seconds']:>8.2f}{row['sentences_per_s']:>9}"
            f"{row['vs_s2s']:>7.2f}x{row['peak_rss_mib']:>13.0f}{row.get('bleu', ''):>7}"
        )
    return "\n".join(lines)
