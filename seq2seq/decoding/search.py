"""Batched greedy and beam search over the model interface only (`seq2seq.decoding.decodable`).

The source is encoded once per batch. With `use_cache=True` (the default) each step feeds only the
newest token and the decoder keeps its keys/values; `use_cache=False` re-decodes the whole prefix
at every step (the slow reference path, kept for tests and benchmarks). Sentences that finish are
dropped from the batch, so the work per step shrinks as the batch completes; the model's tensors
keep the batch at a few sizes only (`seq2seq.decoding.ladder`), so its products take few shapes.
How long each output may grow is `seq2seq.decoding.length_limits`' rule; how a beam search chooses, stops
and ranks is `seq2seq.decoding.beam_rule`'s, which the running search (`decoding.running_search`) follows
too; a hypothesis and its length-normalized score are `seq2seq.decoding.hypothesis`'.
"""

from __future__ import annotations

import torch
from torch import Tensor

from seq2seq.decoding.beam_rule import Beams, best_first, best_log_probs
from seq2seq.decoding.decodable import CacheT, Decodable, MemoryT
from seq2seq.decoding.hypothesis import NEG_INF, Hypothesis, length_normalizer
from seq2seq.decoding.ladder import held_after_drop, pad_rows
from seq2seq.decoding.length_limits import output_limits_of
from seq2seq.decoding.prefix import Forced, force_greedy
from seq2seq.decoding.settings import SearchSettings
from seq2seq.special import BOS, EOS, PAD


def next_scores(
    model: Decodable[MemoryT, CacheT],
    tokens: Tensor,
    memory: MemoryT,
    cache: CacheT | None,
    t: int | Tensor,
    at_limit: Tensor | None,
    settings: SearchSettings,
    held: int = 0,
) -> Tensor:
    """(N, V) float32 next-token logits for each row of `tokens` (N, t+1), -inf where the constraints
    forbid a token (`_constrain`). With `held` > N the memory and cache hold that many rows, the
    live N first (`held_rows`): the step decodes all of them and returns the first N. Their
    log-softmax is what a search chooses from: the probabilities renormalized over the allowed
    tokens, as CTranslate2 does, so a hypothesis' score is its log-probability under the
    distribution it was chosen from. A search that keeps only the best few tokens takes their
    log-softmax alone (`beam_rule.best_log_probs`)."""
    step_input = pad_rows(tokens[:, -1:] if cache is not None else tokens, held)
    logits = model.decode(step_input, memory, cache)[: tokens.size(0), -1].float()  # (N, V)
    return _constrain(logits, t, at_limit, settings, tokens)


def _constrain(
    logp: Tensor, t: int | Tensor, at_limit: Tensor | None, settings: SearchSettings, tokens: Tensor
) -> Tensor:
    """Never <pad> or <bos>; no <eos> before `min_len` tokens; only <eos> at a row's length limit;
    no token that would repeat an n-gram of the row's prefix `tokens` (N, t+1) with `no_repeat_ngram`.
    `t`: the step, or (N,) each row's own (rows at different steps: `decoding.running_search`; their
    `tokens` are PAD before each row's <bos>, which never completes an n-gram).
    Works on scores before or after a log-softmax (log-probabilities, logits): -inf forbids."""
    logp[:, PAD] = NEG_INF  # column views: no index tensors or (N, V) masks on every step
    logp[:, BOS] = NEG_INF
    if isinstance(t, Tensor):
        logp[:, EOS].masked_fill_(t < settings.min_len, NEG_INF)
    elif t < settings.min_len:
        logp[:, EOS] = NEG_INF
    if settings.no_repeat_ngram:
        logp = _ban_repeated_ngrams(logp, tokens[:, 1:], settings.no_repeat_ngram)
    if at_limit is not None:  # None: the search knows that no row is at its limit at this step
        rows = at_limit.nonzero().squeeze(1)
        eos = logp[rows, EOS]
        logp[rows] = NEG_INF
        logp[rows, EOS] = eos
    return logp


def _ban_repeated_ngrams(logp: Tensor, prefix: Tensor, n: int) -> Tensor:
    """-inf for each token that would complete an n-gram already in its row's `prefix` (N, t).

    The last n-1 tokens of each row are compared with every earlier window of n-1 tokens at once;
    the token that followed each matching window is banned.
    """
    if n == 1:
        return logp.scatter(1, prefix, NEG_INF)
    if prefix.size(1) < n:
        return logp
    windows = prefix.unfold(1, n - 1, 1)[:, :-1]  # (N, W, n-1): every window but the current one
    following = prefix[:, n - 1 :]  # (N, W): the token after each window
    match = (windows == prefix[:, None, -(n - 1) :]).all(-1)  # (N, W)
    return logp.scatter(1, torch.where(match, following, PAD), NEG_INF)  # PAD is banned anyway


@torch.no_grad()
def greedy_search(
    model: Decodable[MemoryT, CacheT], src: Tensor, settings: SearchSettings, prefix: Forced | None = None
) -> list[list[Hypothesis]]:
    """Most likely next token at each step, for a batch of sources `src` (B, S); each output starts
    with its sentence's `prefix`, given instead of chosen (`decoding.prefix`)."""
    batch = src.size(0)
    memory = model.encode(src)
    limits = output_limits_of(src, settings, model.max_positions, prefix)
    cache = model.new_cache() if settings.use_cache else None
    rows = torch.arange(batch, device=src.device)  # sentence id of each active row
    tokens = torch.full((batch, 1), BOS, dtype=torch.long, device=src.device)
    scores = torch.zeros(batch, device=src.device)
    out_tokens = torch.full((batch, int(limits.max())), PAD, dtype=torch.long, device=src.device)
    out_scores = torch.zeros(batch, device=src.device)
    generator = None
    if settings.sampling and settings.seed is not None:
        generator = torch.Generator(src.device).manual_seed(settings.seed)
    soonest = int(limits.min())  # the first step (counted from 1) at which an active row is at its limit
    held = batch  # rows of the memory and the cache: the live ones first (`held_rows`)
    for t in range(int(limits.max())):
        at_limit = limits[rows] <= t + 1 if t + 1 >= soonest else None  # no host sync on other steps
        logits = next_scores(model, tokens, memory, cache, t, at_limit, settings, held)
        if settings.sampling:
            best, token = _sample(logits.log_softmax(-1), settings, generator)  # (N,)
        else:
            best, token = (x.squeeze(1) for x in best_log_probs(logits, 1))
        if prefix is not None and t < prefix.steps:
            best, token = force_greedy(best, token, prefix.at(t, rows))
        scores = scores + best
        out_tokens[rows, t] = token
        ended = token == EOS
        if ended.any():
            chose = True if at_limit is None else ~at_limit[ended]  # <eos> at the limit is forced
            out_scores[rows[ended]] = scores[ended] / length_normalizer(t, settings, chose)
            keep = (~ended).nonzero().squeeze(1)
            if keep.numel() == 0:
                break
            rows, scores, token, tokens = rows[keep], scores[keep], token[keep], tokens[keep]
            soonest = int(limits[rows].min())
            held, kept = held_after_drop(keep, held)
            memory = memory.select(kept)
            if cache is not None:
                cache.reorder(kept, kept)
        tokens = torch.cat([tokens, token[:, None]], dim=1)
    found = zip(out_tokens.tolist(), out_scores.tolist(), strict=True)
    return [[Hypothesis(_strip(seq), score)] for seq, score in found]


def _sample(
    logp: Tensor, settings: SearchSettings, generator: torch.Generator | None
) -> tuple[Tensor, Tensor]:
    """A token drawn per row from softmax(logp / temperature), restricted to the top-k and top-p
    tokens; returns its (unscaled) log-probability and the token, like `Tensor.max`."""
    scaled = logp / settings.temperature
    if settings.top_k:
        kth = scaled.topk(min(settings.top_k, scaled.size(1)), dim=1).values[:, -1:]
        scaled = scaled.masked_fill(scaled < kth, NEG_INF)
    if settings.top_p < 1.0:
        ordered, order = scaled.sort(dim=1, descending=True)
        before = ordered.softmax(1).cumsum(1) - ordered.softmax(1)  # mass of the tokens ranked higher
        scaled = scaled.scatter(1, order, ordered.masked_fill(before >= settings.top_p, NEG_INF))
    token = torch.multinomial(scaled.softmax(1), 1, generator=generator).squeeze(1)
    return logp.gather(1, token[:, None]).squeeze(1), token


def _strip(seq: list[int]) -> list[int]:
    """Tokens up to the first <eos> or padding."""
    for i, tok in enumerate(seq):
        if tok in (EOS, PAD):
            return seq[:i]
    return seq


@torch.no_grad()
def beam_search(
    model: Decodable[MemoryT, CacheT], src: Tensor, settings: SearchSettings, prefix: Forced | None = None
) -> list[list[Hypothesis]]:
    """The `nbest` best hypotheses per source (best first) by beam search over a batch `src` (B, S),
    each starting with its sentence's `prefix` (`decoding.prefix`).

    All B x K beams advance together as one (B*K)-row decode per step, by the beam rule
    (`decoding.beam_rule`: the candidates, the finished hypotheses, the stopping rule, the n-best);
    a sentence the rule settles leaves the batch, so the work per step shrinks as the batch completes.
    """
    k = settings.beam
    batch, device = src.size(0), src.device
    limits = output_limits_of(src, settings, model.max_positions, prefix)
    memory = model.encode(src)  # (B, S, D): the K beams of a sentence share its memory
    cache = model.new_cache() if settings.use_cache else None
    sent = torch.arange(batch, device=device)  # sentence id of each active block of K rows
    beams = Beams.start(limits, settings, None if prefix is None else prefix.lengths())  # the search state
    finished = beams.finished  # every sentence's hypotheses, by sentence id
    tokens = torch.full((batch * k, 1), BOS, dtype=torch.long, device=device)
    soonest = int(limits.min())  # the first step (counted from 1) at which an active row is at its limit
    held = batch  # sentences the memory and the cache hold: the live ones first (`held_rows`)
    for t in range(int(limits.max())):
        n = len(beams)
        at_limit = beams.at_limit(t)  # (n,) this step is the last allowed
        forced = at_limit.repeat_interleave(k) if t + 1 >= soonest else None  # no host sync otherwise
        logits = next_scores(model, tokens, memory, cache, t, forced, settings, held * k)
        given = prefix.at(t, sent) if prefix is not None and t < prefix.steps else None
        step = beams.advance(logits, given, tokens, t, at_limit, settings)
        keep = (~step.leaving).nonzero().squeeze(1)  # blocks still searching
        if keep.numel() == 0:
            break
        parent, next_tokens = step.parent, step.tokens
        dropped = keep.numel() < n
        if dropped:
            held, kept = held_after_drop(keep, held)
            parent, memory = parent.view(n, k)[keep].view(-1), memory.select(kept)
            beams, next_tokens, sent = beams.select(keep), next_tokens[keep], sent[keep]
            soonest = int(beams.limits.min())
        if cache is not None:  # beams move within their sentence: the memory moves only on a drop
            cache.reorder(pad_rows(parent, held * k), kept if dropped else None)
        tokens = torch.cat([tokens.index_select(0, parent), next_tokens.view(-1, 1)], dim=1)
    return [best_first(hyps, settings.nbest) for hyps in finished]


def search(
    model: Decodable[MemoryT, CacheT], src: Tensor, settings: SearchSettings, prefix: Forced | None = None
) -> list[list[Hypothesis]]:
    """Greedy (or sampling) for beam 1 with a single hypothesis, beam search otherwise; each output
    starts with its sentence's `prefix` when one is given."""
    if settings.sampling and (settings.beam > 1 or settings.nbest > 1):
        raise ValueError("sampling draws one hypothesis per source: use beam 1 and nbest 1")
    if settings.beam == 1 and settings.nbest == 1:
        return greedy_search(model, src, settings, prefix)
    return beam_search(model, src, settings, prefix)
