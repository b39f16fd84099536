import json
import logging
import lzma
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from tests.conftest import ROOT, tiny_config_dict
from tests.helpers import run_cli


def test_train_writes_a_self_contained_run_directory(tiny_run):
    run = tiny_run.run
    for name in (
        "config.yaml",
        "tokenizer/spm.model",
        "checkpoints/last.pt",
        "checkpoints/best.pt",
        "train.log",
        "metrics.jsonl",
        "finished.json",
    ):
        assert (run / name).is_file(), name
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert Path(saved["data"]["train_src"]).is_absolute()
    assert "validation at step 12" in (run / "train.log").read_text()


def test_non_empty_run_dir_needs_resume_or_overwrite(tiny_run):
    config = tiny_run.config
    result = run_cli("train", str(config))
    assert result.exit_code == 2
    assert "--resume" in result.output and "--overwrite" in result.output


def test_resume_refuses_a_changed_model(tiny_run):
    config = tiny_run.config
    result = run_cli("train", str(config), "--resume", "--set", "model.ffn_dim=128")
    assert result.exit_code == 2
    assert "model.ffn_dim: 64 -> 128" in result.output


@pytest.mark.slow
def test_bad_config_exits_2_naming_the_key_without_traceback(tmp_path):
    raw = tiny_config_dict(tmp_path)
    raw["train"]["lrr"] = 1
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "seq2seq", "train", str(config)], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 2
    assert "train.lrr" in proc.stderr and "did you mean train.lr?" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_override_exits_2(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(tiny_config_dict(tmp_path)), encoding="utf-8")
    result = run_cli("train", str(config), "--set", "model.heads=5")
    assert result.exit_code == 2 and "model.d_model" in result.output


def test_missing_config_exits_2(tmp_path):
    result = run_cli("train", str(tmp_path / "nope.yaml"))
    assert result.exit_code == 2 and "config file not found" in result.output


def test_mismatched_corpus_exits_2(tmp_path):
    raw = tiny_config_dict(tmp_path)
    Path(raw["data"]["train_tgt"]).write_text("ONE\nTWO\n", encoding="utf-8")
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    result = run_cli("train", str(config))
    assert result.exit_code == 2 and "has 400 lines" in result.output and "has 2" in result.output


@pytest.mark.slow
def test_tokenizer_only_then_train(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(tiny_config_dict(tmp_path, max_steps=2, valid_every=2)), encoding="utf-8"
    )
    assert run_cli("train", str(config), "--tokenizer-only").exit_code == 0
    assert (tmp_path / "run" / "tokenizer" / "spm.model").is_file()
    assert not (tmp_path / "run" / "checkpoints").exists()
    result = run_cli("train", str(config))
    assert result.exit_code == 0, result.output
    assert "reusing tokenizer" in (tmp_path / "run" / "train.log").read_text()


@pytest.mark.slow
def test_overwrite_starts_over(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(tiny_config_dict(tmp_path, max_steps=2, valid_every=2)), encoding="utf-8"
    )
    assert run_cli("train", str(config)).exit_code == 0
    assert run_cli("train", str(config), "--overwrite").exit_code == 0


@pytest.mark.slow
def test_separate_vocabularies(tmp_path):
    config = tmp_path / "c.yaml"
    raw = tiny_config_dict(tmp_path, max_steps=2, valid_every=2)
    raw["tokenizer"]["joint"] = False
    raw["model"]["share_all_embeddings"] = False
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    assert run_cli("train", str(config)).exit_code == 0
    assert (tmp_path / "run" / "tokenizer" / "spm.src.model").is_file()
    assert (tmp_path / "run" / "tokenizer" / "spm.tgt.model").is_file()


def test_translate_keeps_one_line_per_input_line(tiny_run):
    run = tiny_run.run
    long_line = " ".join(["red cat"] * 60)  # longer than the model's 64 positions
    lines = ["red cat runs", "", "the big dog sleeps", "   ", long_line, "blue bird"]
    result = run_cli("translate", str(run), input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    out = result.stdout.split("\n")
    assert out[-1] == "" and len(out) - 1 == len(lines)
    assert out[1] == "" and out[3] == ""
    assert "line 5" in result.stderr and "translating only the first" in result.stderr


def test_translate_order_matches_one_at_a_time(tiny_run, tmp_path):
    run = tiny_run.run
    lines = ["a red cat", "the big green dog sleeps under the tree", "bird", "small house on the tree eats"]
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    assert run_cli("translate", str(run), "-i", str(src), "-o", str(out), "--max-tokens", "16").exit_code == 0
    batched = out.read_text(encoding="utf-8").split("\n")[:-1]
    singles = [run_cli("translate", str(run), input=line + "\n").stdout.rstrip("\n") for line in lines]
    assert batched == singles


def test_translate_reads_a_compressed_input_as_the_plain_one(tiny_run, tmp_path):
    lines = ["a red cat", "", "bird on the tree"]
    text = ("\n".join(lines) + "\n").encode()
    (tmp_path / "in.txt").write_bytes(text)
    (tmp_path / "in.xz").write_bytes(lzma.compress(text))
    outputs = []
    for name in ("in.txt", "in.xz"):
        result = run_cli("translate", str(tiny_run.run), "-i", str(tmp_path / name))
        assert result.exit_code == 0, result.output
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1] and outputs[0].count("\n") == 3


def test_translate_nbest_and_scores(tiny_run):
    run = tiny_run.run
    result = run_cli("translate", str(run), "--nbest", "3", input="red cat\nblue bird\n")
    rows = result.stdout.rstrip("\n").split("\n")
    assert len(rows) == 2
    for row in rows:
        fields = row.split("\t")
        assert len(fields) == 6
        scores = [float(s) for s in fields[1::2] if s != "blank"]  # a blank hypothesis has none
        assert scores == sorted(scores, reverse=True)
    single = run_cli("translate", str(run), "--scores", input="red cat\n").stdout
    assert len(single.rstrip("\n").split("\t")) == 2


def test_translate_last_line_without_newline(tiny_run):
    run = tiny_run.run
    result = run_cli("translate", str(run), "--beam", "1", input="red cat\nblue bird")
    assert result.exit_code == 0 and result.stdout.count("\n") == 2


def test_translate_missing_run_dir_exits_2(tmp_path):
    result = run_cli("translate", str(tmp_path / "nope"), input="x\n")
    assert result.exit_code == 2 and "run directory not found" in result.output


def test_translate_missing_checkpoint_exits_2(tiny_run):
    run = tiny_run.run
    result = run_cli("translate", str(run), "--checkpoint", "step_999", input="x\n")
    assert result.exit_code == 2 and "checkpoint not found" in result.output and "available" in result.output


def test_translate_invalid_utf8_exits_2_naming_the_line(tiny_run, tmp_path):
    run = tiny_run.run
    src = tmp_path / "bad.txt"
    src.write_bytes(b"red cat\nblue \xff bird\n")
    result = run_cli("translate", str(run), "-i", str(src))
    assert result.exit_code == 2 and "line 2 is not valid UTF-8" in result.output


def test_average_checkpoints(run_copy):
    run = run_copy.run
    result = run_cli("average", str(run), "--last", "2")
    assert result.exit_code == 0, result.output
    assert (run / "checkpoints" / "averaged.pt").is_file()
    out = run_cli("translate", str(run), "--checkpoint", "averaged", input="red cat\n")
    assert out.exit_code == 0 and out.stdout.count("\n") == 1
    assert run_cli("average", str(run), "--last", "50").exit_code == 2


@pytest.mark.slow
def test_translate_streams_stdin_line_by_line(tiny_run):
    """A line written to stdin is answered before stdin is closed (interactive use)."""
    run = tiny_run.run
    proc = subprocess.Popen(
        [sys.executable, "-m", "seq2seq", "translate", str(run), "--beam", "1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    proc.stdin.write(b"red cat\n")
    proc.stdin.flush()
    first = proc.stdout.readline()
    assert first.endswith(b"\n")
    proc.stdin.write(b"blue bird\n")
    proc.stdin.close()
    rest = proc.stdout.read()
    assert proc.wait(timeout=60) == 0
    assert rest.count(b"\n") == 1


def test_overwrite_never_deletes_a_directory_s2s_did_not_make(tmp_path):
    raw = tiny_config_dict(tmp_path)
    raw["run_dir"] = str(tmp_path)  # the directory holding the user's data and config
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    result = run_cli("train", str(config), "--overwrite")
    assert result.exit_code == 2 and "not an s2s run directory" in result.output
    assert config.is_file() and (tmp_path / "data" / "train.src").is_file()


def test_bad_device_exits_2(tiny_run):
    run = tiny_run.run
    result = run_cli("translate", str(run), "--device", "gpu", input="red cat\n")
    assert result.exit_code == 2 and "'gpu' is not one of" in result.output


def test_invalid_override_value_exits_2(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(tiny_config_dict(tmp_path)), encoding="utf-8")
    result = run_cli("train", str(config), "--set", "train.lr=[")
    assert result.exit_code == 2 and "not valid YAML" in result.output


def test_unwritable_output_exits_2(tiny_run, tmp_path):
    run = tiny_run.run
    result = run_cli("translate", str(run), "-o", str(tmp_path / "missing" / "dir" / "out.txt"), input="x\n")
    assert result.exit_code == 2 and "error:" in result.output


def test_average_refuses_to_replace_training_checkpoints(tiny_run):
    run = tiny_run.run
    result = run_cli("average", str(run), "--last", "1", "--output", "last")
    assert result.exit_code == 2 and "would replace a training checkpoint" in result.output


def test_nbest_empty_line_keeps_the_field_count(tiny_run):
    run = tiny_run.run
    rows = run_cli("translate", str(run), "--nbest", "2", input="red cat\n\n").stdout.split("\n")
    assert len(rows[0].split("\t")) == len(rows[1].split("\t")) == 4


@pytest.mark.parametrize("command", ["translate", "evaluate"])
def test_length_limits_can_be_set_on_the_command_line(tiny_run, tmp_path, monkeypatch, command):
    """--max-len-a/--max-len-b/--min-len reach the search (their effect is tested in test_decoding)."""
    import seq2seq.decoding.search as searching

    run = tiny_run.run
    seen = []
    real_search = searching.search
    monkeypatch.setattr(
        searching, "search", lambda m, src, s, *rest: seen.append(s) or real_search(m, src, s, *rest)
    )
    src = tmp_path / "src.txt"
    src.write_text("red cat\n")
    # fp32: the same numbers on every CPU (auto is bf16 on some)
    limits = ["--max-len-a", "0.5", "--max-len-b", "3", "--min-len", "2", "--precision", "fp32"]
    if command == "translate":
        result = run_cli("translate", str(run), "-i", str(src), *limits)
    else:
        result = run_cli("evaluate", str(run), "--src", str(src), "--ref", str(src), *limits)
    assert result.exit_code == 0, result.output
    assert seen and all((s.max_len_a, s.max_len_b, s.min_len) == (0.5, 3, 2) for s in seen)


def test_sampling_from_the_command_line_is_seeded(tiny_run):
    run = tiny_run.run
    lines = "red cat runs\nblue bird sleeps on the house\n"
    first = run_cli("translate", str(run), "--sampling", "--seed", "7", input=lines)
    again = run_cli("translate", str(run), "--sampling", "--seed", "7", input=lines)
    assert first.exit_code == 0, first.output
    assert first.stdout == again.stdout and first.stdout.count("\n") == 2


@pytest.mark.parametrize(
    "args, message",
    [
        (["--sampling", "--beam", "5"], "--sampling draws one translation per line"),
        (["--top-k", "5"], "apply to --sampling"),
        (["--precision", "fp64"], "precision 'fp64' is not one of"),
    ],
)
def test_decode_options_that_do_not_fit_exit_2(tiny_run, args, message):
    run = tiny_run.run
    result = run_cli("translate", str(run), *args, input="red cat\n")
    assert result.exit_code == 2 and message in result.output


def test_evaluate_records_the_precision_and_decode_options(tiny_run, tmp_path):
    run = tiny_run.run
    src = tmp_path / "src.txt"
    src.write_text("red cat\nblue bird\n")
    result = run_cli(
        "evaluate",
        str(run),
        "--src",
        str(src),
        "--ref",
        str(src),
        "--json",
        str(tmp_path / "s.json"),
        "--precision",
        "fp32",
        "--no-repeat-ngram",
        "2",
    )
    assert result.exit_code == 0, result.output
    decode = json.loads((tmp_path / "s.json").read_text())["decode"]
    assert decode["precision"] == "float32" and decode["no_repeat_ngram"] == 2


@pytest.mark.slow
def test_evaluate_augment_scores_the_same_modified_copies_for_the_same_seed(tiny_run, tmp_path):
    src, ref = str(tiny_run.data / "valid.src"), str(tiny_run.data / "valid.tgt")
    records, outputs = [], []
    for name in ("a", "b"):
        out, record = tmp_path / name, tmp_path / f"{name}.json"
        result = run_cli(
            "evaluate", str(tiny_run.run), "--src", src, "--ref", ref, "--out", str(out), "--json",
            str(record), "--augment", "upper,typos", "--seed", "4", "--engine", "s2s",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        rows = [line.split()[0] for line in result.stdout.splitlines()[1:4]]
        assert rows == [name, "+upper", "+typos"] and "--seed 4" in result.stdout
        records.append(json.loads(record.read_text())["augmented"])
        outputs.append([(out.parent / f"{name}.{m}").read_text() for m in ("upper", "typos")])
    for sets in records:
        for s in sets:
            del s["hypotheses"]["path"], s["decode"]["seconds"]
            del s["decode"]["sentences_per_second"], s["decode"]["tokens_per_second"]
    assert records[0] == records[1] and outputs[0] == outputs[1]
    assert [s["changes"] for s in records[0]] == ["source and references", "source"]
    refused = run_cli("evaluate", "--hyp", ref, "--ref", ref, "--augment", "typos")
    assert refused.exit_code == 2 and refused.output.startswith("error: --augment"), refused.output
    source = tmp_path / "c.upper"  # what --out c writes its upper-cased copy's translations to
    source.write_text("red cat\n")
    args = ["--src", str(source), "--ref", str(source), "--out", str(tmp_path / "c"), "--augment", "upper"]
    refused = run_cli("evaluate", str(tiny_run.run), *args)
    assert refused.exit_code == 2 and "--out (+upper)" in refused.output and "is also --src" in refused.output
    assert source.read_text() == "red cat\n" and not (tmp_path / "c").exists()


def test_int8_translation_keeps_the_lines_and_is_recorded(tiny_run, tmp_path):
    run = tiny_run.run
    result = run_cli(
        "translate", str(run), "--quantize", "int8", "--device", "cpu", input="red cat\n\nblue bird\n"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.count("\n") == 3 and result.stdout.split("\n")[1] == ""
    src = tmp_path / "src.txt"
    src.write_text("red cat\n")
    json_file = tmp_path / "s.json"
    args = ["--src", str(src), "--ref", str(src), "--json", str(json_file), "--quantize", "int8"]
    assert run_cli("evaluate", str(run), *args).exit_code == 0
    assert json.loads(json_file.read_text())["decode"]["quantize"] == "int8"
    result = run_cli("translate", str(run), "--quantize", "int4", input="red cat\n")
    assert result.exit_code == 2 and "the only choice is int8" in result.output


def test_export_help_names_the_hf_extra():
    # rich reads "[hf]" as markup unless escaped, which printed "pip install 's2s'"
    result = run_cli("export", "--help")
    assert "'s2s[hf]'" in result.output


@pytest.mark.slow
def test_prepare_verb_prints_statistics_and_training_reuses_its_arrays(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(tiny_config_dict(tmp_path, max_steps=2)), encoding="utf-8")
    figure = tmp_path / "corpus.png"
    result = run_cli("prepare", str(config), "--workers", "1", "--figure", str(figure))
    assert result.exit_code == 0, result.output
    assert figure.read_bytes().startswith(b"\x89PNG")
    assert "400 pairs read, 398 kept" in result.output and "tokens per pair" in result.output
    ids_file = tmp_path / "run" / "prepared" / "train" / "train.src.ids"
    made = ids_file.stat().st_ino
    result = run_cli("train", str(config))
    assert result.exit_code == 0, result.output
    assert ids_file.stat().st_ino == made
    assert "reusing prepared corpus train" in (tmp_path / "run" / "train.log").read_text()


def test_an_in_process_command_leaves_the_process_as_it_found_it(tiny_config_file):
    """`s2s train` sets torch's thread count (train.num_threads: 1) and the seq2seq logger (a console
    and a file handler) for its process; run in-process by a test, it must hand back both as it found
    them, or every later test would run on its settings."""
    logger = logging.getLogger("seq2seq")
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        handlers, level = logger.handlers[:], logger.level
        result = run_cli("train", str(tiny_config_file), "--tokenizer-only")
        assert result.exit_code == 0, result.output
        assert torch.get_num_threads() == 3
        assert logger.handlers == handlers and logger.level == level
    finally:
        torch.set_num_threads(before)
