"""A model with fewer layers started from a bigger one's (shrink and fine-tune, Shleifer & Rush 2020).

`train.init_from` names the bigger run; its embeddings, norms and output layer are copied whole, and
each of the new model's layers starts as one of its layers: those `train.init_encoder_layers` and
`train.init_decoder_layers` list, or, by default, as many as the new model has, evenly spread. A
distilled student started so begins where its teacher is instead of from nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from torch import Tensor

from seq2seq.config import Config, ModelConfig
from seq2seq.errors import RunDirError
from seq2seq.models.family import model_family

LAYER_COUNTS = ("encoder_layers", "decoder_layers")  # the model keys a shrunk start may change


def spread(have: int, want: int) -> tuple[int, ...]:
    """`want` of `have` layers, evenly spaced, the first and (for two or more) the last among them.

    One layer is the first: it was trained on the embeddings it will read.
    """
    if want == 1:
        return (0,)
    return tuple(int(i * (have - 1) / (want - 1) + 0.5) for i in range(want))


def chosen_layers(source: ModelConfig, cfg: Config, where: str) -> dict[str, tuple[int, ...]]:
    """For each stack whose layers the new model takes other than one to one: the source layer that
    starts each of its layers, by its `model` key. Every problem is listed in one `RunDirError`.

    `source` is the model section of the run `where` the weights come from.
    """
    given, family = cfg.train.init_layers, model_family(cfg.model)
    stacks = set(family.layer_stacks.values())
    chosen, problems = {}, []
    for key in LAYER_COUNTS:
        have, want, layers = getattr(source, key), getattr(cfg.model, key), given[key]
        if key not in stacks:
            if layers:
                problems.append(f"train.init_{key}: a {family.name} model has no such layers")
            continue
        if layers:
            if len(layers) != want:
                problems.append(f"train.init_{key}: lists {len(layers)} layers; model.{key} is {want}")
            if outside := [i for i in layers if i >= have]:
                problems.append(f"train.init_{key}: {where} has {have} (0 to {have - 1}), not {outside[0]}")
            chosen[key] = tuple(layers)
        elif want < have:
            chosen[key] = spread(have, want)
        elif want > have:
            problems.append(
                f"model.{key}: {want} here, {have} in {where}; to start more layers than it has, "
                f"list in train.init_{key} which of its layers starts each (one may start several)"
            )
    if problems:
        listed = "\n  ".join(problems)
        raise RunDirError(f"train.init_from: this model cannot start from {where}:\n  {listed}")
    return {key: layers for key, layers in chosen.items() if layers != tuple(range(getattr(source, key)))}


def shrunk_weights(
    weights: Mapping[str, Tensor], stacks: Mapping[str, str], layers: Mapping[str, tuple[int, ...]]
) -> dict[str, Tensor]:
    """`weights` with each stack in `layers` renumbered: the new layer N is the source's `layers[key][N]`.

    `stacks` are the model family's (`Family.layer_stacks`). Everything outside those stacks
    (embeddings, final norms, the output layer) is kept as it is.
    """
    renumbered = {prefix: layers[key] for prefix, key in stacks.items() if key in layers}
    shrunk = {}
    for name, value in weights.items():
        prefix = next((p for p in renumbered if name.startswith(p)), None)
        if prefix is None:
            shrunk[name] = value
            continue
        index, rest = name[len(prefix) :].split(".", 1)
        for new, old in enumerate(renumbered[prefix]):
            if old == int(index):
                shrunk[f"{prefix}{new}.{rest}"] = value
    return shrunk
