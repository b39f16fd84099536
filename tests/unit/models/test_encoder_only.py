"""The encoder-only reader (`model.arch: encoder_only`, `task: classify | tag`): model properties,
the label set and its alignment to pieces, the scores, and the quickstarts through the CLI."""

import json

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from seq2seq.config import Task, config_from_dict
from seq2seq.data.labels import Labels
from seq2seq.data.parallel import ParallelData
from seq2seq.data.targets import TARGETS
from seq2seq.decoding.reading import read
from seq2seq.errors import ConfigError, DataError
from seq2seq.evaluation.reader_metrics import LabelMetricOptions, MacroF1, SpanF1, TagMetricOptions, bio_spans
from seq2seq.evaluation.report import confusion_counts
from seq2seq.special import EOS, PAD
from seq2seq.training.loss import TrainingLoss
from tests.conftest import make_model, random_ids
from tests.helpers import run_cli


def reader(task: str, pooling: str = "cls", seed: int = 0):
    model = make_model(seed=seed, arch="encoder_only", task=task, pooling=pooling)
    model.word_start[::2] = False  # even ids continue a word, odd ids begin one
    model.word_start[:6] = False  # the special ids begin none (as with a real tokenizer)
    return model


def with_eos(src: torch.Tensor, lengths: list[int]) -> torch.Tensor:
    """Rows of `src` cut to `lengths`, each followed by </s>, right-padded."""
    out = torch.full((src.size(0), max(lengths) + 1), PAD)
    for row, n in enumerate(lengths):
        out[row, :n], out[row, n] = src[row, :n], EOS
    return out


# ---- the model ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("task", "pooling"), [("classify", "cls"), ("classify", "mean"), ("tag", "cls")])
def test_padding_and_batch_neighbours_change_nothing(task, pooling):
    model = reader(task, pooling)
    src = random_ids(3, 9)
    batch = with_eos(src, [9, 4, 6])
    together = model(batch)
    for row, n in enumerate([9, 4, 6]):
        alone = model(with_eos(src[row : row + 1], [n]))
        width = alone.size(1)
        assert_close(together[row : row + 1, :width], alone, atol=1e-5, rtol=1e-4)


def test_every_source_token_reaches_the_label_and_each_tag():
    for task in ("classify", "tag"):
        model = reader(task)
        src = with_eos(random_ids(2, 6), [6, 6])
        changed = src.clone()
        changed[:, 5] = (changed[:, 5] + 1 - 4) % 19 + 4
        assert not torch.allclose(model(src)[:, 0], model(changed)[:, 0])  # bidirectional: first sees last


def test_mean_pooling_differs_from_cls_pooling():
    src = with_eos(random_ids(2, 6), [6, 3])
    assert not torch.allclose(reader("classify", "cls")(src), reader("classify", "mean")(src))


def test_read_gives_each_words_first_piece_tag_and_a_probability():
    model = reader("tag")
    src = with_eos(torch.tensor([[7, 8, 9, 11, 10], [9, 10, 10, 0, 0]]), [5, 3])  # odd ids begin words
    logits = model(src)
    logits[..., PAD] = float("-inf")
    expected = logits.argmax(-1)
    hyps = read(model, src)
    assert hyps[0][0].tokens == expected[0, [0, 2, 3]].tolist()
    assert hyps[1][0].tokens == expected[1, [0]].tolist()
    assert all(0 < h[0].score <= 1 for h in hyps)
    assert PAD not in hyps[0][0].tokens + hyps[1][0].tokens


def test_a_readers_loss_counts_labels_only():
    model = reader("tag")
    src = with_eos(random_ids(2, 5), [5, 3])
    tags = torch.tensor([[3, PAD, 2, PAD, 1, PAD], [2, 1, PAD, PAD, PAD, PAD]])
    loss = TrainingLoss(model, 0.0)(src, tags, tags)
    logp = model(src).log_softmax(-1)
    real = tags != PAD
    assert_close(loss, -logp[real].gather(1, tags[real][:, None]).sum())


# ---- labels and data ----------------------------------------------------------------------------


def test_tags_sit_on_each_words_first_piece():
    labels = Labels(TARGETS["tag"], ("B-PER", "I-PER", "O"))
    word_start = np.array([False] * 5 + [True, False, True, False])  # 5, 7 begin words; 6, 8 continue
    targets = labels.targets([[5, 6, 6, 7, 8]], ["B-PER O"], word_start)
    assert targets == [[1, PAD, PAD, 3, PAD]]
    with pytest.raises(DataError, match="2 words, not the 3"):
        labels.targets([[5, 6, 7]], ["O O O"], word_start)


def test_labels_round_trip_and_unknown_labels_are_padding():
    labels = Labels(TARGETS["classify"], ("food", "sport"))
    assert labels.encode(["sport", " food ", "music"]) == [[2], [1], [PAD]]
    assert labels.decode([[2], [1]]) == ["sport", "food"]
    assert labels.unseen(["sport", "music", "", "jazz"]) == 2


def test_a_reader_batch_keeps_labels_aligned_with_the_source():
    data = ParallelData.from_lists([[5, 6, 7], [8]], [[1, PAD, 2], [3]], TARGETS["tag"])
    batch = data.batch(np.arange(2))
    assert batch.src.tolist() == [[5, 6, 7, EOS], [8, EOS, PAD, PAD]]
    assert batch.tgt_out.tolist() == [[1, PAD, 2, PAD], [3, PAD, PAD, PAD]]
    assert batch.tgt_out.shape == batch.src.shape
    classify = ParallelData.from_lists([[5, 6], [7]], [[2], [1]], TARGETS["classify"]).batch(np.arange(2))
    assert classify.tgt_out.tolist() == [[2], [1]] and batch.num_tgt_tokens == 3


def test_config_ties_tasks_to_the_encoder_only_family():
    base = {"run_dir": "r", "data": {"train_src": "a", "train_tgt": "b", "valid_src": "c", "valid_tgt": "d"}}
    for model, train, message in [
        ({"arch": "encoder_only"}, {}, "an encoder_only model classifies or tags"),
        ({"task": "tag"}, {}, "an encoder_only model classifies or tags"),
        ({"arch": "encoder_only", "task": "tag"}, {"best_metric": "bleu"}, "use accuracy or loss"),
        ({"task": "translate"}, {"best_metric": "accuracy"}, "accuracy is for task: classify or tag"),
        ({"arch": "encoder_only", "task": "tag", "pooling": "mean"}, {}, "model.pooling: only for task"),
    ]:
        with pytest.raises(ConfigError, match=message):
            config_from_dict({**base, "model": model, "train": train})


# ---- scores -------------------------------------------------------------------------------------


def test_bio_spans_follow_conlleval():
    assert bio_spans("B-PER I-PER O B-LOC".split()) == {(0, 2, "PER"), (3, 4, "LOC")}
    assert bio_spans("I-PER I-PER I-LOC B-PER B-PER".split()) == {
        (0, 2, "PER"),
        (2, 3, "LOC"),
        (3, 4, "PER"),
        (4, 5, "PER"),
    }
    assert bio_spans(["O", "O"]) == set()


def test_span_f1_counts_type_and_both_ends():
    refs = [["B-PER I-PER O B-LOC", "B-ORG O"]]
    # 1 of 3 predicted, 1 of 3 true
    score = SpanF1(Task.TAG).corpus_score(["B-PER O O B-LOC", "B-LOC O"], refs)
    assert score.score == pytest.approx(100 / 3)


def test_macro_f1_averages_the_reference_labels():
    refs = [["a", "a", "b", "c"]]
    macro_f1 = MacroF1(Task.CLASSIFY, ("a", "b", "c"))
    score = macro_f1.corpus_score(["a", "b", "b", "a"], refs)
    # a: tp 1 fp 1 fn 1 -> 0.5; b: tp 1 fp 1 -> 2/3; c: fn 1 -> 0
    assert score.score == pytest.approx(100 * (0.5 + 2 / 3 + 0) / 3)
    # a label no reference has is not averaged in (as in each bootstrap resample that lacks it)
    assert macro_f1.corpus_score(["a", "c"], [["a", "b"]]).score == pytest.approx(50)


def test_confusion_counts_rows_are_references():
    labels, counts = confusion_counts(
        LabelMetricOptions(Task.CLASSIFY).confusion_pairs(["a", "a", "b"], ["a", "b", "b"])
    )
    assert labels == ["a", "b"] and counts.tolist() == [[1, 1], [0, 1]]
    labels, counts = confusion_counts(TagMetricOptions(Task.TAG).confusion_pairs(["B-X O"], ["O"]))
    assert labels == ["(none)", "B-X", "O"] and counts.tolist() == [[0, 0, 0], [0, 0, 1], [1, 0, 0]]


def test_two_prediction_files_get_a_paired_bootstrap(tmp_path):
    ref, good, bad = tmp_path / "ref", tmp_path / "good", tmp_path / "bad"
    ref.write_text("a\nb\nc\na\n" * 20)
    good.write_text("a\nb\nc\na\n" * 19 + "b\nb\nc\na\n")
    bad.write_text("a\na\na\na\n" * 20)
    json_file = tmp_path / "e.json"
    result = run_cli(
        "evaluate", "--task", "classify", "--ref", str(ref), "--hyp", str(good), "--hyp", str(bad),
        "--bootstrap", "200", "--json", str(json_file),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    record = json.loads(json_file.read_text())
    assert record["systems"][0]["scores"]["accuracy"]["score"] == pytest.approx(98.75)
    assert record["bootstrap"]["results"]["accuracy"][1]["p_value"] < 0.05
    assert "macro-F1" in result.output and "classes:3" in result.output
    assert run_cli("evaluate", "--task", "sort", "--ref", str(ref), "--hyp", str(good)).exit_code == 2
