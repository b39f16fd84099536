"""Every number is checked for what it implies when the config or the options are read: NaN, the
infinities, negative values and sizes no machine can hold are an `error:` line naming the key or the
option, before anything runs, for every numeric config key (`config_from_dict`, `s2s train --set`),
every numeric option of every command, and the numeric options of the scripts."""

from __future__ import annotations

import copy
import dataclasses
import json
import typing
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main
import yaml

from benchmarks import __main__ as bench
from benchmarks.gpu_check import __main__ as gpu_check
from benchmarks.gpu_check.check import MULTI30K
from seq2seq.cli import app
from seq2seq.config import Config, config_from_dict
from seq2seq.config.data import CorpusConfig
from seq2seq.errors import ConfigError
from tests.conftest import TrainedRun, tiny_config_dict
from tests.helpers import run_cli, tree_digest

BIG = str(10**20)  # past every integer any library takes
CORPUS = "data.corpora[0]."  # the first corpus of the multilingual config below

# (key, a value it refuses); at least one per numeric key (`numeric_keys` checks)
CONFIG_CASES = [
    ("data.max_len", "0"),
    ("data.max_len_ratio", "-1"),
    ("data.temperature", "0"),
    ("data.temperature", "1000"),
    (f"{CORPUS}weight", "0"),
    (f"{CORPUS}weight", "1e12"),
    (f"{CORPUS}clean.min_alnum", "1.5"),
    (f"{CORPUS}augment.upper", "1.5"),
    (f"{CORPUS}augment.title", "-0.1"),
    (f"{CORPUS}augment.typos", "nan"),
    (f"{CORPUS}augment.nopunct", "2"),
    (f"{CORPUS}augment.noise", "inf"),
    (f"{CORPUS}augment.subword", "1.5"),
    (f"{CORPUS}augment.subword_alpha", "0"),
    ("tokenizer.vocab_size", "2000000"),
    ("tokenizer.character_coverage", "0.5"),
    ("tokenizer.max_sentences", "0"),
    ("model.d_model", "0"),
    ("model.d_model", "1000000"),
    ("model.heads", "0"),
    ("model.ffn_dim", "2000000000"),
    ("model.encoder_layers", "100000"),
    ("model.decoder_layers", "100000"),
    ("model.dropout", "1"),
    ("model.attention_dropout", "-0.1"),
    ("model.activation_dropout", "1"),
    ("model.max_positions", "100000"),
    ("train.seed", "-1"),
    ("train.init_encoder_layers", "[-1]"),
    ("train.init_decoder_layers", "[-1]"),
    ("train.max_tokens", "1073741824"),
    ("train.accum_steps", "100000"),
    ("train.lr", "1000"),
    ("train.warmup_steps", "-1"),
    ("train.min_lr", "-1"),
    ("train.weight_decay", "1000000"),
    ("train.clip_norm", "-1"),
    ("train.label_smoothing", "1"),
    ("train.max_steps", "-1"),
    ("train.max_epochs", "-1"),
    ("train.max_minutes", "-1"),
    ("train.log_every", "0"),
    ("train.valid_every", "0"),
    ("train.keep_checkpoints", "-1"),
    ("train.patience", "-1"),
    ("train.valid_beam", "100000"),
    ("train.valid_subset", "-1"),
    ("train.valid_samples", "-1"),
    ("train.ema_decay", "1"),
    ("train.valid_augment.upper", "1.5"),
    ("train.valid_augment.title", "-0.1"),
    ("train.valid_augment.typos", "nan"),
    ("train.valid_augment.nopunct", "2"),
    ("train.valid_augment.noise", "0.1"),
    ("train.valid_augment.subword", "0.5"),
    ("train.valid_augment.subword_alpha", "nan"),
    ("train.guided_alignment.weight", "-1"),
    ("train.lora.rank", "100000"),
    ("train.lora.alpha", "0"),
    ("train.lora.dropout", "1"),
    ("train.guided_alignment.layer", "100"),
    ("train.num_threads", "100000"),
    ("train.shape_multiple", "-1"),
    ("train.shape_multiple", "100000"),
    ("decode.beam", "100000"),
    ("decode.length_penalty", "1e300"),
    ("decode.patience", "0.5"),
    ("decode.max_len_a", "1e300"),
    ("decode.max_len_b", "1000000"),
    ("decode.min_len", "-1"),
    ("decode.no_repeat_ngram", "1000000"),
    ("decode.max_tokens", "1073741824"),
]


def numeric_keys(cls: type, prefix: str) -> list[str]:
    """Every number of the dataclass `cls` (and of the sections within it) as a dotted key."""
    keys = []
    for name, hint in typing.get_type_hints(cls).items():
        if dataclasses.is_dataclass(hint):
            keys += numeric_keys(hint, f"{prefix}{name}.")  # type: ignore[arg-type]
        elif hint in (int, float, tuple[int, ...]):
            keys.append(f"{prefix}{name}")
    return keys


def test_every_numeric_config_key_has_a_refused_value():
    """A new number of the config is tested without being listed, or this fails."""
    keys = [k for k in numeric_keys(Config, "") if not k.startswith("data.corpora")]
    keys += numeric_keys(CorpusConfig, CORPUS)
    assert sorted(keys) == sorted({key for key, _ in CONFIG_CASES})


def multilingual_config(tmp_path: Path) -> dict[str, Any]:
    """The tiny config with two directions, so that the corpora's keys and data.temperature apply."""
    raw = tiny_config_dict(tmp_path)
    data = raw["data"]
    src, tgt = data.pop("train_src"), data.pop("train_tgt")
    valid_src, valid_tgt = data.pop("valid_src"), data.pop("valid_tgt")
    ways = [{"src_lang": "de", "tgt_lang": "en"}, {"src_lang": "en", "tgt_lang": "de"}]
    data["corpora"] = [
        {"name": "de_en", "src": src, "tgt": tgt, **ways[0]},
        {"name": "en_de", "src": tgt, "tgt": src, **ways[1]},
    ]
    data["valid"] = [
        {"src": valid_src, "tgt": valid_tgt, **ways[0]},
        {"src": valid_tgt, "tgt": valid_src, **ways[1]},
    ]
    data["temperature"] = 2.0
    return raw


def with_value(raw: dict[str, Any], key: str, value: str) -> tuple[dict[str, Any], str]:
    """`raw` with `key` set to the YAML `value`, and the `--set` override that does the same."""
    changed = copy.deepcopy(raw)
    if key.startswith(CORPUS):  # a list item: --set gives the whole list
        node = changed["data"]["corpora"][0]
        *parents, leaf = key.removeprefix(CORPUS).split(".")
        for name in parents:
            node = node.setdefault(name, {})
        node[leaf] = yaml.safe_load(value)
        return changed, f"data.corpora={json.dumps(changed['data']['corpora'])}"
    *parents, leaf = key.split(".")
    node = changed
    for name in parents:
        node = node.setdefault(name, {})
    node[leaf] = yaml.safe_load(value)
    return changed, f"{key}={value}"


@pytest.mark.parametrize(("key", "value"), CONFIG_CASES, ids=[f"{k}={v}" for k, v in CONFIG_CASES])
def test_a_number_out_of_its_range_is_refused_when_the_config_is_read(tmp_path, key, value):
    raw = multilingual_config(tmp_path)
    config_from_dict(raw)  # the config itself is valid: only the value below is not
    changed, override = with_value(raw, key, value)
    with pytest.raises(ConfigError, match=key.replace("[", r"\[").replace(".", r"\.")):
        config_from_dict(changed)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    result = run_cli("train", str(config), "--set", override)
    assert result.exit_code == 2, result.output
    assert "error:" in result.output and key in result.output and "Traceback" not in result.output
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_weights_that_draw_no_pair_of_a_corpus_are_refused_before_training(tmp_path):
    """What the weights imply for the corpora's sizes, checked once `s2s prepare` has counted them."""
    raw = multilingual_config(tmp_path)
    raw["data"]["corpora"][1]["weight"] = 1e-9  # 400 pairs x 1e-9: none an epoch
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    result = run_cli("train", str(config))
    assert result.exit_code == 2, result.output
    assert "error: data.corpora en_de: the weights and data.temperature draw no pair" in result.output
    assert not (tmp_path / "run" / "metrics.jsonl").exists()
    assert not list((tmp_path / "run").glob("checkpoints/*.pt"))


# option -> a value it refuses (the first word), and what else the command needs for it to apply
OPTION_CASES: dict[str, tuple[str, ...]] = {
    "--beam": (BIG,),
    "--nbest": (BIG,),
    "--length-penalty": ("inf",),
    "--patience": ("0.5",),
    "--max-len-a": ("inf",),
    "--max-len-b": (BIG,),
    "--min-len": (BIG,),
    "--no-repeat-ngram": (BIG,),
    "--temperature": ("inf", "--sampling"),
    "--top-k": (BIG, "--sampling"),
    "--top-p": ("nan", "--sampling"),
    "--rerank-weight": ("inf", "--rerank", "."),  # the range is read before the reverse run
    "--seed": (BIG,),  # translate's (for --sampling) and evaluate's (for --augment)
    "--max-tokens": (BIG,),
    "--bootstrap": (BIG,),
    "--shortlist": ("61",),  # the tiny run's target vocabulary has 60 pieces
    "--shortlist-common": (BIG, "--shortlist", "5"),
    "--workers": (BIG,),
    "--sample": ("-1",),
    "--last": ("0",),
    "--port": ("70000",),
    "--threads": (BIG,),
    "--batch-window-ms": ("60000", "--batching", "static"),  # as long as the default --timeout
    "--max-lines": (BIG,),
    "--max-chars": (BIG,),
    "--max-body-bytes": (BIG,),
    "--max-beam": (BIG,),
    "--timeout": ("nan",),
    "--keep": ("nan",),
    "--lines": ("-1",),
    "--older-than": ("nan",),
    "--within": ("-0.5",),
}


def numeric_options() -> list[tuple[str, str]]:
    """(command, option) for every integer or float option of every command, as click reads the
    command line (the groups `s2s` registers too: `cache clear`, `filter`)."""
    found = []

    def walk(command: Any, path: str) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}".strip())
        for param in command.params if not hasattr(command, "commands") else ():
            if param.param_type_name != "option" or param.is_flag:
                continue
            numbers = (int, float, list[int], list[float])  # a repeatable option's list: each
            if param.type_descriptor.annotation in numbers:  # the number typer reads
                found.append((path, next(o for o in param.opts if o.startswith("--"))))

    walk(typer.main.get_command(app), "")
    return found


NUMERIC_OPTIONS = numeric_options()


def test_every_numeric_option_has_a_refused_value():
    assert {"--beam", "--shortlist", "--timeout", "--workers"} <= {o for _, o in NUMERIC_OPTIONS}
    assert {option for _, option in NUMERIC_OPTIONS} == set(OPTION_CASES)


def command_args(command: str, option: str, run: TrainedRun, tmp_path: Path) -> list[str]:
    """The command on the tiny run (a private copy), writing to `tmp_path/out`."""
    src, tgt, out = str(run.data / "valid.src"), str(run.data / "valid.tgt"), str(tmp_path / "out")
    compare = ["evaluate", "--hyp", tgt, "--hyp", src, "--ref", tgt, "--json", out]  # nothing decoded
    return {
        "translate": ["translate", str(run.run), "-i", src, "-o", out],
        "evaluate": compare if option == "--bootstrap" else ["evaluate", str(run.run), "--src", src],
        "score": ["score", str(run.run), "--src", src, "--tgt", tgt, "-o", out],
        "export": ["export", str(run.run), out],
        "prepare": ["prepare", str(run.config)],
        "average": ["average", str(run.run), "--output", out],
        "select": ["select", src, "--json", out],  # refused before the record is read
        # an address no machine has: a server that started despite a bad option stops there
        "serve": ["serve", str(run.run), "--host", "256.256.256.256"],
        "filter": ["filter", "--src", src, "--out-src", out],
        "cache clear": ["cache", "clear"],
    }[command] + (["--ref", tgt, "--out", out] if command == "evaluate" and option != "--bootstrap" else [])


@pytest.mark.parametrize(("command", "option"), NUMERIC_OPTIONS, ids=[" ".join(c) for c in NUMERIC_OPTIONS])
def test_a_number_out_of_its_range_is_refused_when_the_options_are_read(run_copy, tmp_path, command, option):
    if option == "--shortlist":
        pytest.importorskip("ctranslate2", reason="the shortlist is a CTranslate2 export's: s2s[ct2]")
    value, *needs = OPTION_CASES[option]
    before = tree_digest(run_copy.run)
    result = run_cli(*command_args(command, option, run_copy, tmp_path), *needs, option, value)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error:") and option in result.output, result.output
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()
    assert tree_digest(run_copy.run) == before


@pytest.mark.parametrize("command", ["translate", "evaluate", "serve"])
def test_a_shortest_output_the_model_cannot_write_is_refused(run_copy, tmp_path, command):
    """--min-len against the run's model.max_positions (64 in the tiny run: 62 tokens and </s>)."""
    result = run_cli(*command_args(command, "--min-len", run_copy, tmp_path), "--min-len", "63")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: --min-len 63: the model writes at most 62 tokens")
    assert not (tmp_path / "out").exists()


def multi30k(tmp_path: Path) -> Path:
    """A directory with Multi30k's six files, one line each."""
    data = tmp_path / "data"
    data.mkdir()
    for name in MULTI30K:
        (data / name).write_text("ein Satz\n" if name.endswith(".de") else "a sentence\n", encoding="utf-8")
    return data


def refused(*args: Any) -> None:
    raise AssertionError("the check started its work")


@pytest.mark.parametrize("budget", ["nan", "inf", "-1", "0", "1e9"])
def test_the_gpu_check_refuses_a_budget_that_is_no_time_limit(tmp_path, monkeypatch, capsys, budget):
    monkeypatch.setattr(gpu_check, "prepare_work", refused)
    out, work = tmp_path / "out", tmp_path / "work"
    args = ["--dry-run", str(multi30k(tmp_path)), "--out", str(out), "--work", str(work)]
    assert gpu_check.main([*args, "--budget", budget]) == 2
    assert capsys.readouterr().err.startswith(f"error: --budget {float(budget)}")
    assert not out.exists() and not work.exists()


BENCH_CASES = [
    ("--time-limit", "nan"),
    ("--time-limit", "inf"),
    ("--window-ms", "nan"),
    ("--window-ms", "-1"),
    ("--fractions", "0.5,nan"),
    ("--threads", BIG),
    ("--matmul-size", "1000000"),
    ("--beams", "1,100000"),
    ("--serve-beam", "100000"),
    ("--grid-tokens", "4000,1073741824"),
    ("--clients", "1,1000000"),
    ("--mixed-clients", "1,1000000"),
    ("--pairs", "10000000000"),
    ("--shortlist", BIG),
    ("--limit", "-1"),
    ("--repeat", BIG),
    ("--fairseq-steps", BIG),
    ("--warmup", BIG),
    ("--steps", BIG),
    ("--shape-multiple", "-8"),
    ("--rounds", BIG),
]


@pytest.mark.parametrize(("option", "value"), BENCH_CASES, ids=[" ".join(c) for c in BENCH_CASES])
def test_the_benchmarks_refuse_a_number_out_of_its_range(monkeypatch, capsys, option, value):
    monkeypatch.setattr(bench, "run_sections", refused)
    assert bench.main(["--sections", "train", "--device", "cpu", option, value]) == 2
    assert capsys.readouterr().err.startswith(f"error: {option} ")
