"""Advice names what exists. An error that advises an option or a command (`choose one with --to`,
`use --device cpu`, `add --restart`, "run `s2s prepare CONFIG`") advises one the verb has, and taking
the advice works: each is triggered here (or in the test `FOLLOWED` names), the advice is read from
its message, and the command it makes succeeds. `ADVICE` finds every such message in the package, so
an error that gives new advice without a test that follows it fails here."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import typer
from fastapi.testclient import TestClient

from seq2seq.cli import app
from seq2seq.serve.app import TranslateRequest, create_app
from seq2seq.serve.server_settings import ServerSettings
from seq2seq.translate import resume
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.translator import Translator
from tests.conftest import TrainedRun
from tests.helpers import ROOT, run_cli

# advice in an error message: an option or a command after one of these words
ADVICE = re.compile(r"\b(?:with|use|add|give|run)\s+`?(--?[a-z][a-z0-9-]*|s2s [a-z]+)")
# an option the advice names (`--to`, `-i`; "use --resume ... or --overwrite" names two), or with
# "; add it" the option before it (`--sampling`)
ADVISED = re.compile(r"(?:\b(?:with|use|add|give|or)\s+(--?[a-z][a-z0-9-]*)|(--[a-z][a-z0-9-]*); add it)")
OTHERS = "tests/system/test_advice_on_runs_is_followed.py"
PREPARED = "test_the_advised_prepare_makes_the_corpus_again"
# a fragment of each advising message -> the test that triggers it and follows its advice
FOLLOWED = {
    "names its format with --format": "tests/unit/cli/test_options.py::"
    "test_exports_former_spelling_of_its_format_is_refused_with_advice",
    "choose the language with --to": "test_a_language_token_s_advice_is_followed",
    "ask for the language by its code": "test_a_language_token_s_advice_is_followed",
    "add --reverse RUN": "test_advised_options_are_followed",
    "give the reference translations with --ref": "test_advised_options_are_followed",
    "give --hyp FILE to score hypotheses": "test_advised_options_are_followed",
    "give the source text with --src": "test_advised_options_are_followed",
    "no CUDA GPU is available; use --device cpu": "test_advised_options_are_followed",
    "runs on the CPU only; add --device cpu": "test_advised_options_are_followed",
    "add --restart": "test_a_resumable_output_s_advice_to_restart_is_followed",
    "give its compute type with --quantize": "tests/system/test_options_checked_for_every_engine.py::"
    "test_the_advice_to_use_quantize_or_s2s_s_decoder_is_followed",
    "give the source text with -i": "test_closed_standard_streams_advise_files",
    "to a file with -o": "test_closed_standard_streams_advise_files",
    "use --resume to continue it or --overwrite": f"{OTHERS}::test_a_trained_run_is_continued_as_advised",
    "with --resume or start over with --overwrite": f"{OTHERS}::test_a_diverged_run_is_continued_as_advised",
    "restore it, or start over with --overwrite": f"{OTHERS}::test_a_missing_tokenizer_advises_overwrite",
    "start a new run with --overwrite": "tests/system/test_refused_changes_nothing.py::"
    "test_a_stage_that_no_longer_matches_is_replaced_by_prepare_overwrite",
    "use --device cuda": f"{OTHERS}::test_a_gpu_for_every_process_is_advised_as_device_cuda",
    "use --batching static": f"{OTHERS}::test_static_batching_is_advised_where_continuous_cannot_be",
    "make one with `s2s export": f"{OTHERS}::test_an_export_is_made_as_advised_and_translates",
    "no prepared corpus in": f"{OTHERS}::{PREPARED}",
    "is missing or unreadable: run `s2s prepare": f"{OTHERS}::{PREPARED}",
    "score its predictions with `s2s evaluate`": "tests/system/test_every_family.py::"
    "test_a_reader_s_score_advises_evaluate_which_scores_its_answers",
    "is not the one the run trained on": "tests/system/test_records_checked.py::"
    "test_a_corrupt_prepared_corpus_is_made_again_by_the_advised_command",
    "is unusable (": "tests/system/test_refused_changes_nothing.py::"
    "test_an_inconsistent_prepared_corpus_is_made_again_by_the_advised_command",
    "give --tgt and --out-tgt too": "tests/unit/commands/test_filter.py::test_scores_advise_a_parallel_text",
    "choose again with `s2s select": "tests/unit/evaluation/test_selection.py::"
    "test_a_damaged_choice_is_made_again_as_advised",
    "run the step again with --redo": "tests/system/test_pipeline.py::"
    "test_a_damaged_record_is_redone_as_advised",
    "nothing is written into: give --out": "tests/system/test_pipeline.py::"
    "test_an_export_is_evaluated_with_the_advised_out",
    "restore the run's files, or start over with --overwrite": "tests/integration/test_lora.py::"
    "test_resuming_beside_other_base_weights_is_refused_and_overwrite_starts_over",
}
CPU = ("--device", "cpu", "--precision", "fp32")


def message_text(node: ast.AST) -> str:
    """A message as the source writes it: its f-string fields as {}, its pieces joined in order."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(message_text(part) for part in node.values)
    if isinstance(node, ast.BinOp):
        return message_text(node.left) + message_text(node.right)
    return "{}"


def raised_messages() -> Iterator[tuple[str, str]]:
    """(path:line, message) of each error the package raises with a message written where it raises."""
    for path in sorted((ROOT / "seq2seq").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                yield from ((where, message_text(arg)) for arg in node.exc.args)


def options_of(verb: str) -> dict[str, bool]:
    """The options `s2s VERB --help` lists, each -> whether it takes a value."""
    shown = run_cli(verb, "--help")
    assert shown.exit_code == 0, shown.output
    params = typer.main.get_command(app).commands[verb].params  # type: ignore[attr-defined]
    options = {opt: not p.is_flag for p in params if p.param_type_name == "option" for opt in p.opts}
    return {
        opt: value for opt, value in options.items() if re.search(rf"(?<![\w-]){opt}(?![\w-])", shown.output)
    }


def advice(message: str, verb: str, values: dict[str, str]) -> list[list[str]]:
    """The arguments the message advises, one list per option it names (alternatives, as in "use
    --resume ... or --overwrite"), each an option of VERB: the option, and its value when it takes one
    (the word after it, or `values[option]` for a placeholder such as FILE)."""
    options, advised = options_of(verb), []
    for match in ADVISED.finditer(message):
        option = match.group(1) or match.group(2)
        assert option in options, f"{message!r} advises {option}, which `s2s {verb}` does not have"
        if not options[option]:
            advised.append([option])
            continue
        assert match.group(1), f"{message!r} names no value for {option}"
        value = message[match.end() :].split(maxsplit=1)[0].rstrip(".,;)")
        advised.append([option, values.get(option, value)])
    assert advised, f"no option found in the advice {message!r}"
    return advised


def advised_command(message: str, values: dict[str, str]) -> list[str]:
    """The `s2s ...` command the message advises, its placeholders (RUN_DIR, CONFIG) filled in."""
    found = re.search(r"`s2s ([^`]+)`", message)
    assert found, f"no command in the advice {message!r}"
    return [values.get(word, word) for word in found[1].split()]


def test_every_piece_of_advice_is_followed_by_a_test():
    for where, message in raised_messages():
        if ADVICE.search(message):
            assert any(fragment in message for fragment in FOLLOWED), (
                f"{where}: {message!r} gives advice: add a test that follows it to FOLLOWED"
            )
    for test in set(FOLLOWED.values()):
        path, _, name = test.rpartition("::")
        source = (ROOT / path).read_text(encoding="utf-8") if path else Path(__file__).read_text()
        assert f"def {name}(" in source, test


def refused(*args: str, input: str | None = None) -> str:
    """The message of the error `s2s ARGS` is refused with."""
    result = run_cli(*args, input=input)
    errors = re.findall(r"^error: (.*)$", result.output, re.MULTILINE)
    assert result.exit_code == 2 and errors, result.output
    return errors[-1]


def succeeds(*args: str, input: str | None = None) -> None:
    result = run_cli(*args, input=input)
    assert result.exit_code == 0, result.output


def multilingual_args(verb: str, run: TrainedRun, out: Path) -> list[str]:
    src, tgt = str(run.data / "valid.src"), str(run.data / "valid.tgt")
    return {
        "translate": ["translate", str(run.run), "-i", src, "-o", str(out)],
        "evaluate": ["evaluate", str(run.run), "--src", src, "--ref", tgt, "--out", str(out)],
        "score": ["score", str(run.run), "--src", src, "--tgt", tgt, "-o", str(out)],
        "score --reverse": ["score", str(run.run), "--src", src, "--tgt", tgt, "--to", "en", "-o", str(out)]
        + ["--reverse", str(run.run)],
    }[verb]


@pytest.mark.parametrize(
    "verb",
    ["translate", "evaluate", "score", pytest.param("score --reverse", marks=pytest.mark.slow), "serve"],
)
def test_a_multilingual_run_s_choice_of_language_is_followed(multilingual_run, tmp_path, verb):
    """`this run translates into de, en: choose one with --to`: the verb has that option (a request
    that field), and given one of the languages listed, the command succeeds."""
    choice = re.compile(r"translates into ([a-z, ]+): choose one with (\S+)$")
    if verb == "serve":
        translator = Translator.load(multilingual_run.run, placement=Placement("cpu", "fp32"))
        settings = ServerSettings(DecodeOverrides(max_tokens=200), 20)
        with TestClient(create_app(translator, settings, "multilingual", running=translator)) as client:
            message = client.post("/translate", json={"text": ["red cat"]}).json()["error"]
            found = choice.search(message)
            assert found and found[2] in TranslateRequest.model_fields and "--to" in options_of("serve")
            chosen = {"text": ["red cat"], found[2]: found[1].split(", ")[0]}
            assert client.post("/translate", json=chosen).status_code == 200
        return
    args = [*multilingual_args(verb, multilingual_run, tmp_path / "out"), *CPU]
    found = choice.search(refused(*args))
    assert found, args
    assert found[2] in options_of(args[0])
    succeeds(*args, found[2], found[1].split(", ")[0])


@pytest.mark.parametrize("given", [("--tag", "<2de>"), ("--to", "<2de>")], ids=["tag", "to"])
@pytest.mark.parametrize("verb", ["translate", "evaluate", "score"])
def test_a_language_token_s_advice_is_followed(multilingual_run, tmp_path, verb, given):
    args = [*multilingual_args(verb, multilingual_run, tmp_path / "out"), *CPU]
    asked = ["--to", "en", *given] if given[0] == "--tag" else list(given)
    message = refused(*args, *asked)
    succeeds(*args, *advice(message, args[0], {})[0])


def option_cases(tiny: TrainedRun, multilingual: TrainedRun, tmp_path: Path) -> dict[str, list[str]]:
    """Commands refused with advice, by name."""
    src, tgt = str(tiny.data / "valid.src"), str(tiny.data / "valid.tgt")
    many = [str(multilingual.run), "--src", src, "--tgt", tgt, "--to", "en", *CPU]
    return {
        "ref": ["evaluate", "--hyp", tgt],
        "hyp or src": ["evaluate", "--ref", tgt],
        "src": ["evaluate", str(tiny.run), "--ref", tgt, "--out", str(tmp_path / "hyp"), *CPU],
        "sampling": ["translate", str(tiny.run), "-i", src, "--top-k", "5", *CPU],
        "quantize": ["translate", str(tiny.run), "-i", src, "--quantize", "int8", "--device", "cuda"],
        "reverse": ["score", *many, "--reverse-to", "de"],
        "device": ["translate", str(tiny.run), "-i", src, "--device", "cuda"],
    }


@pytest.mark.parametrize("case", ["ref", "hyp or src", "src", "sampling", "quantize", "reverse", "device"])
def test_advised_options_are_followed(tiny_run, multilingual_run, tmp_path, case):
    if case == "device" and torch.cuda.is_available():
        pytest.skip("a GPU is there: --device cuda is no mistake")
    args = option_cases(tiny_run, multilingual_run, tmp_path)[case]
    message = refused(*args)
    values = {
        "--ref": str(tiny_run.data / "valid.tgt"),
        "--hyp": str(tiny_run.data / "valid.tgt"),
        "--src": str(tiny_run.data / "valid.src"),
        "--reverse": str(multilingual_run.run),
    }
    succeeds(*args, *advice(message, args[0], values)[0])


@pytest.mark.slow
@pytest.mark.parametrize("change", ["fewer lines", "other settings", "damaged record"])
def test_a_resumable_output_s_advice_to_restart_is_followed(tiny_run, tmp_path, monkeypatch, change):
    """An interrupted `translate -i -o` that cannot continue says to add --restart: it then begins again."""
    source, out = tmp_path / "src", tmp_path / "out"
    source.write_text("".join(f"red cat {i}\n" for i in range(12)), encoding="utf-8")
    args = ["translate", str(tiny_run.run), "-i", str(source), "-o", str(out), *CPU]
    monkeypatch.setattr(resume, "CHUNK_LINES", 4)
    translate, calls = Translator.translate, []

    def interrupted(self, lines, *rest, **named):
        calls.append(len(lines))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return translate(self, lines, *rest, **named)

    with monkeypatch.context() as patched:
        patched.setattr(Translator, "translate", interrupted)
        assert run_cli(*args).exit_code == 130
    partial, record = resume.partial_paths(out)
    assert partial.is_file() and record.is_file()
    if change == "fewer lines":
        source.write_text("red cat 0\n", encoding="utf-8")
    elif change == "other settings":
        args += ["--beam", "1"]
    else:
        record.write_text("not a record", encoding="utf-8")
    message = refused(*args)
    succeeds(*args, *advice(message, "translate", {})[0])
    assert out.read_text(encoding="utf-8").count("\n") == source.read_text(encoding="utf-8").count("\n")


@pytest.mark.parametrize("closed", ["stdin", "stdout"])
def test_closed_standard_streams_advise_files(tiny_run, tmp_path, monkeypatch, closed):
    from seq2seq.translate.streams import check_std_streams

    with monkeypatch.context() as patched:
        patched.setattr(f"sys.{closed}", None)
        with pytest.raises(Exception, match="closed") as error:
            check_std_streams(None, None)
    source = tmp_path / "src"
    source.write_text("red cat\n", encoding="utf-8")
    values = {"-i": str(source), "-o": str(tmp_path / "out")}
    succeeds("translate", str(tiny_run.run), *CPU, *advice(str(error.value), "translate", values)[0])
