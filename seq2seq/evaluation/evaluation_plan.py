"""What `s2s evaluate` does, without its command line: check the files, decide the task once,
translate --src with the run when no --hyp is given, and score, into one whole `Evaluation`."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from seq2seq.config import Config, DecodeConfig, Task
from seq2seq.data.targets import TARGETS
from seq2seq.errors import EvaluateError
from seq2seq.evaluation.evaluate_files import EvaluateFiles
from seq2seq.evaluation.figure import new_figure
from seq2seq.evaluation.metric_options import MetricOptions
from seq2seq.evaluation.metrics import TextFile, read_references
from seq2seq.evaluation.modified_sets import AS_GIVEN, ModifiedSets, augmented_sets
from seq2seq.evaluation.reader_metrics import LabelMetricOptions, ReaderMetricOptions, TagMetricOptions
from seq2seq.evaluation.record import DecodeRun, Evaluation, MadeBy, evaluate_files
from seq2seq.files import check_outputs, write_text
from seq2seq.run.layout import RunDir
from seq2seq.run.parts import reranker_inputs, run_inputs
from seq2seq.translate.direction import STRAIGHT, Direction
from seq2seq.translate.engine import Engine, LineTranslator
from seq2seq.translate.options import DecodeOptions, DecodeOverrides, decode_options, rerank_weight_of
from seq2seq.translate.request import Request
from seq2seq.translate.reranking import line_translator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvaluationPlan:
    """What `s2s evaluate` will do, decided and checked before anything is read or translated."""

    files: EvaluateFiles  # `out` filled in when --src is translated
    task: Task  # what the hypotheses are: it chooses what they are scored with (`scoring_options`)
    decoding: DecodeOptions  # how --src is translated (when it is)
    direction: Direction = STRAIGHT  # --to, --tag and --pivot: how --src is translated
    augment: ModifiedSets = AS_GIVEN  # modified copies of the set, scored beside it (--augment)


def plan_evaluation(
    files: EvaluateFiles,
    task: str | None,
    asked: DecodeOverrides,
    direction: Direction = STRAIGHT,
    export: Config | None = None,
    augment: ModifiedSets = AS_GIVEN,
) -> EvaluationPlan:
    """Check the mode and the outputs, and decide the task, reading the run's config once.

    `direction` (--to, --tag, --pivot) and `augment` (modified copies of --src) need a translation of
    --src to apply to. `export`: RUN_DIR is a CTranslate2 export (`s2s export`) of a
    run with this config, which it translates with; nothing may be written into it.
    """
    if export is not None and files.out is None:
        raise EvaluateError(f"{files.run_dir} is an export, which nothing is written into: give --out FILE")
    run = export or check_evaluate_mode(files)
    if direction.tag and files.hyps:
        raise EvaluateError("--tag starts the sources RUN_DIR translates; --hyp files are already translated")
    if augment.modifiers and files.hyps:
        raise EvaluateError("--augment translates modified copies of --src with RUN_DIR; give no --hyp")
    if (direction.to or direction.pivot) and files.hyps:
        option = "--to" if direction.to else "--pivot"
        raise EvaluateError(f"{option} chooses how RUN_DIR translates; --hyp files are already translated")
    decode, positions = (run.decode, run.model.max_positions) if run else (DecodeConfig(), None)
    decoding = decode_options(asked, decode, positions)
    if not files.hyps:
        files = dataclasses.replace(files, out=files.out or default_out(files, decoding.checkpoints))
    report = files.report / "index.html" if files.report else None
    judges, configs = reranker_inputs(asked.rerank, run)
    check_outputs(
        {"--out": files.out, **augment.outputs(files.out), "--json": files.json_file, "--report": report},
        {
            "--src": files.src,
            **{f"--ref #{i + 1}": p for i, p in enumerate(files.refs)},
            **{f"--hyp #{i + 1}": p for i, p in enumerate(files.hyps)},
            **run_inputs(files.run_dir, decoding.checkpoints),
            **judges,
            **({"the export": files.run_dir} if export is not None else {}),
        },
    )
    decoding = decode_options(rerank_weight_of(asked, configs), decode, positions)  # the runs are there
    evaluated = evaluation_task(task, run, files.run_dir)
    if augment.modifiers and "tgt" not in TARGETS[evaluated].piece_sides:  # a reader's are labels
        raise EvaluateError(f"--augment modifies sources and their translations; {evaluated} gives labels")
    return EvaluationPlan(files, evaluated, decoding, direction, augment)


def check_evaluate_mode(files: EvaluateFiles) -> Config | None:
    """Scores given hypotheses (--hyp), or translates --src with RUN_DIR, then scores; the run's config."""
    if files.hyps and files.out is not None:
        raise EvaluateError("--out names the translations of --src; --hyp files are already translated")
    if not files.hyps and files.run_dir is None:
        raise EvaluateError("give --hyp FILE to score hypotheses, or RUN_DIR --src FILE to translate them")
    if not files.hyps and files.src is None:
        raise EvaluateError(f"to translate with {files.run_dir}, give the source text with --src FILE")
    # a wrong path fails now, with a message that says so
    return RunDir(files.run_dir).load_config() if files.run_dir is not None else None


def default_out(files: EvaluateFiles, checkpoints: tuple[str, ...]) -> Path:
    """RUN_DIR/SRC.CHECKPOINT.hyp: the translations of --src, named after the weights that made them."""
    assert files.run_dir is not None and files.src is not None  # check_evaluate_mode's rule
    return files.run_dir / f"{files.src.name}.{'+'.join(Path(c).stem for c in checkpoints)}.hyp"


def evaluation_task(task: str | None, run: Config | None, run_dir: Path | None) -> Task:
    """What the hypotheses are: --task, else what the run's model does, else translations."""
    if task is None:
        return run.model.task if run is not None else Task.TRANSLATE
    try:
        asked = Task(task)
    except ValueError:
        raise EvaluateError(f"--task {task!r}: choose one of {', '.join(Task)}") from None
    if run is not None and run.model.task != asked:
        raise EvaluateError(f"--task {asked}, but {run_dir} was trained for {run.model.task}")
    return asked


def scoring_options(
    task: Task, metrics: MetricOptions, references: list[TextFile]
) -> MetricOptions | ReaderMetricOptions:
    """BLEU, chrF and TER for translations; a reader's scores, over the first reference's labels."""
    classes = tuple(sorted({r.strip() for r in references[0].lines} - {""}))
    options: dict[Task, MetricOptions | ReaderMetricOptions] = {
        Task.TRANSLATE: metrics,
        Task.CLASSIFY: LabelMetricOptions(Task.CLASSIFY, classes),
        Task.TAG: TagMetricOptions(Task.TAG, classes),
    }
    return options[task]


@dataclass(frozen=True)
class Translated:
    """The engine that translated --src and the request it was given: what the report draws its
    attention maps and counts its tokens with."""

    engine: Engine
    request: Request


def run_evaluation(
    plan: EvaluationPlan, metrics: MetricOptions, load: Callable[[], Engine], samples: int
) -> tuple[Evaluation, Translated | None]:
    """Read, translate (without --hyp) with the engine `load` gives (chosen by the command) and score;
    also what translated, for the report."""
    files = plan.files
    metrics.bleu()  # an unknown tokenizer fails now, not after translating
    if files.report is not None:
        new_figure(1, 1)  # a missing matplotlib fails now, not after translating
    source = TextFile.read(files.src) if files.src else None
    references = read_references(files.refs, source)
    options = scoring_options(plan.task, metrics, references)
    if files.hyps:
        return evaluate_files(files.hyps, references, options, source, samples, MadeBy(files.run_dir)), None
    assert files.run_dir is not None and source is not None and files.out is not None  # the plan's rules
    translator = load()
    request = Request.of(plan.decoding, direction=plan.direction.direct, scores=False)
    translator.source_tokens.prefix(plan.direction)  # a language or tag it lacks fails now
    # a reverse run and the training text for recasing are read here, once for every set
    lines = line_translator(translator, plan.direction, plan.decoding, files.run_dir)
    record = plan.decoding.record()  # the line path: reranking and recasing
    decode = translate_timed(translator, lines, source, files.out, request, plan.direction, record)
    log.info("translations written to %s", files.out)
    made_by = MadeBy(files.run_dir, tuple(translator.checkpoints), decode)
    result = evaluate_files([files.out], references, options, source, samples, made_by)
    if plan.augment.modifiers:
        result.augmented = augmented_sets(  # a translation's, scored with `metrics` (the plan's rules)
            plan.augment,
            source,
            references,
            metrics,
            files.out,
            lambda src, out: translate_timed(translator, lines, src, out, request, plan.direction, record),
        )
    # the report's attention maps show one direct translation; a pivoted one is two
    return result, None if plan.direction.pivot else Translated(translator, request)


def translate_timed(
    translator: Engine,
    lines: LineTranslator,
    source: TextFile,
    out: Path,
    request: Request,
    direction: Direction = STRAIGHT,
    record: dict[str, object] | None = None,
) -> DecodeRun:
    """Translate every line of `source` into `out` with `lines` (`translator`, through `direction`'s
    pivot language if it names one, reranked and recased as `record` says: `line_translator`),
    timing the translation alone (for the record, which says what engine made it)."""
    pivot = direction.pivot
    start = time.perf_counter()
    texts = [t.texts[0] for t in lines.translate(source.lines, request)]
    seconds = time.perf_counter() - start
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text(out, "".join(f"{t}\n" for t in texts))
    return DecodeRun(
        {
            **dataclasses.asdict(request.search),
            "max_tokens": request.max_tokens,
            **translator.describe(),  # the engine, where it ran, its precision or compute type, shortlist
            "tag": direction.tag,
            # a multilingual run's target language
            **({"to": language} if (language := translator.source_tokens.language(direction.to)) else {}),
            **({"pivot": pivot} if pivot else {}),
            **(record or {}),
        },
        sentences=len(texts),
        source_tokens=sum(map(len, translator.tokenizers.src.encode(source.lines))),
        target_tokens=sum(map(len, translator.tokenizers.tgt.encode(texts))),
        seconds=seconds,
    )
