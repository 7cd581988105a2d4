"""`benchctl train`: the RLVR training loop, one step read top to bottom.

    rollout    the in-process vLLM engine samples G completions for each of P prompts, seeded per prompt from
               (seed, step, data position, problem id), with each sampled token's log-probability
    reward     the task's own grader: 1.0 for a correct completion, else 0.0; plus DAPO's overlong penalty (Eq. 13,
               `shaping.overlong_penalty`) when on. Dynamic sampling repeats rollout + reward until P groups are
               informative by correctness (0 < #correct < G)
    advantage  one registry call: est.advantages(rewards) on every group sampled this step (all rounds, so batch
               statistics and state see the policy's actual batch, spec §6), then the filter keeps the informative
               groups for the update; est.token_advantages(...) (N, T) of those
    loss       clipped surrogate (token ratio, or GSPO's sequence ratio) + optional k3 KL, aggregated (spec §6);
               forward in `--dtype` over fp32 weights, in token-budget micro-batches with `--micro-batch-tokens`,
               advantages weighted by `--rollout-correction` (engine/trainer mismatch) when on
    update     epochs x mini-batches of AdamW with gradient clipping, on every core (`device.threads`)
    sync       engine.load_weights(policy weights), then verified on a probe sequence (`sync.check_sync`)
    log        metrics row, rollouts part, live display; checkpoint and held-out eval on their cadence

The trainer never branches on an estimator's name: what an estimator needs (OAR's importance scores) it asks
for through `est.token_scores`. Rows whose token advantages are all zero (degenerate groups) are left out of
the forward/backward when no KL term needs them; the aggregation weights still count them, so the loss and
gradient are exactly those of the full batch (`losses.active_rows`). That is where most of the speed comes
from once the policy learns: ACR grows, and so does the work skipped. Entropy and the engine/policy gap are measured
on rows chosen without looking at advantages (`measure`), so every arm is measured alike.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from benchctl.estimators._common import group_stats
from benchctl.results import train_run
from benchctl.trainers import metrics as M
from benchctl.trainers.batch import length_buckets, pack, sampled_logprobs, token_budget_split
from benchctl.trainers.config import TrainConfig, eval_due, evaluates, resolved_overlong_buffer
from benchctl.trainers.device import compute_context, deterministic, threads
from benchctl.trainers.heldout import evaluate
from benchctl.trainers.losses import active_rows, aggregation_weights, combine_metrics, policy_loss
from benchctl.trainers.policy import chunked_sequence_logprobs, sequence_logprobs, token_logprobs
from benchctl.trainers.rollout_correction import correction_weights, mismatch_metrics
from benchctl.trainers.runtime import PhaseTimer, stop_on_sigint
from benchctl.trainers.scores import SCORERS, Scoring, answer_masks
from benchctl.trainers.session import Session, draw, export_final_model, open_session, save_checkpoint
from benchctl.trainers.shaping import overlong_penalty
from benchctl.trainers.sync import check_sync
from benchctl.trainers.weights import engine_state_dict, param_change, param_snapshot


@dataclass(frozen=True)
class TrainResult:
    """What `train` returns (nothing is printed by the library)."""

    run: Path
    steps: int  # last finished step
    metrics: tuple[dict, ...]
    interrupted: bool  # stopped by Ctrl-C (after writing a checkpoint)


def train(cfg: TrainConfig, display=None) -> TrainResult:
    """Run (or resume) one training run; returns when `cfg.steps` or `cfg.token_budget` is reached."""
    s = open_session(cfg)
    if display is not None:
        s.display = display
    with s.trackers, stop_on_sigint(s), s.display:  # trackers closed at the end, on Ctrl-C and on errors
        if evaluates(cfg) and s.state.step == 0:  # the starting point, for before/after comparisons
            evaluate(s, 0)
        while s.state.step < cfg.steps and not _budget_spent(s) and not s.stop_requested:
            step = s.state.step + 1
            row = train_step(s, step)
            s.state.step = step
            s.state.metrics.append(row)
            _after_step(s, step, row)
    if s.stop_requested and train_run.latest_checkpoint_step(s.run) != s.state.step:
        save_checkpoint(s)  # Ctrl-C came between this step's cadence check and the loop test
    if not s.stop_requested:
        _finish(s)
    return TrainResult(s.run, s.state.step, tuple(s.state.metrics), s.stop_requested)


def train_step(s: Session, step: int) -> dict[str, float]:
    """One step: rollout -> reward -> advantage -> loss/update -> sync; returns its metrics row."""
    cfg, times, start = s.cfg, PhaseTimer(), time.perf_counter()
    # ---- rollout + reward (DAPO dynamic sampling repeats both until enough groups are informative) ---------
    got = collect(s, step, times)
    # ---- advantage ----------------------------------------------------------------------------------------
    with times("advantage"):
        seq_adv = s.estimator.advantages(got.rewards)  # (S, G): the one registry call, on every group sampled
        trained = got.trained()  # (P,) the groups the update trains (spec §6: the filter comes after the estimator)
        samples = [x for i in trained for x in got.groups[i]]  # N = P * G rollouts, group-major
        batch = pack([x.prompt_token_ids for x in samples], [x.token_ids for x in samples], s.pad_id, s.device)
        scores, reasoning = importance_scores(s, batch, samples)
        kept_adv = seq_adv[trained] * got.keep[trained, None]  # (P, G); a dropped group trains with A = 0
        token_adv = s.estimator.token_advantages(kept_adv.reshape(-1), scores, reasoning)  # (N, T)
    token_adv = torch.as_tensor(token_adv, dtype=torch.float32, device=s.device)
    degenerate = group_stats(got.rewards[trained]).degenerate  # (P,)
    nondegenerate = torch.as_tensor(np.repeat(~degenerate, cfg.group_size), device=s.device)
    engine_lp = sampled_logprobs(samples, batch)
    # ---- loss + update ------------------------------------------------------------------------------------
    s.engine.sleep()
    with threads(s.threads), deterministic(s.device == "cpu"):  # same seed, same bits (device.deterministic)
        diagnostics = measure(s, batch, engine_lp, times)
        update_metrics = update(s, step, batch, token_adv, nondegenerate, engine_lp, times)
    # ---- sync ---------------------------------------------------------------------------------------------
    with times("sync"):
        s.engine.wake_up()
        s.engine.load_weights(engine_state_dict(s.model))
    with times("sync_check"):  # independent of the sync code: the engine now scores a probe as the policy does
        diagnostics["sync/probe_gap"] = check_sync(s, step)
    # ---- log ----------------------------------------------------------------------------------------------
    every = [x for group in got.groups for x in group]  # every rollout sampled this step
    num_tokens = np.array([x.num_tokens for x in every])
    s.state.tokens_total += got.generated  # every rollout generated, DAPO's dropped groups included
    s.state.samples_total += got.rewards.size
    table = train_run.rollout_table(  # the estimator's batch: every group sampled, its reward and advantage
        step, [p.id for p in got.problems], got.rewards, seq_adv, num_tokens, [x.finish_reason for x in every],
        [x.text for x in every],
    )  # fmt: skip
    train_run.write_rollouts(s.run, step, table)
    row = {
        "step": step,
        **M.reward_metrics(got.correct, got.rewards),  # accuracy; acr/* of what the estimator saw (= est/acr)
        "reward/overlong_penalty": float(got.penalty.mean()),
        **M.estimator_metrics(s.estimator.diagnostics()),
        **M.advantage_metrics(kept_adv),
        **diagnostics,
        **update_metrics,
        **M.response_metrics(num_tokens, np.array([x.finish_reason == "length" for x in every])),
        "rollout/tokens": got.generated,
        "rollout/tokens_total": s.state.tokens_total,
        "rollout/samples_total": s.state.samples_total,
        "rollout/rounds": got.rounds,
        "rollout/groups": len(got.problems),
        "rollout/groups_trained": float(got.keep.sum()),
        "optim/lr": s.scheduler.get_last_lr()[0],
    }
    row.update({f"time/{k}": v for k, v in times.items()})
    row["time/step"] = time.perf_counter() - start
    return row


@dataclass(frozen=True)
class Sampled:
    """Every group sampled in one step (all rounds of dynamic sampling), in sampling order: S groups of G."""

    problems: list
    groups: list  # S lists of G completions
    correct: np.ndarray  # (S, G) 1.0 correct, else 0.0: dynamic sampling's filter and pass@k use these
    penalty: np.ndarray  # (S, G) DAPO's overlong penalty (Eq. 13, `shaping.overlong_penalty`); 0 when off
    rewards: np.ndarray  # (S, G) correct + penalty: what the estimator sees
    keep: np.ndarray  # (S,) bool: the groups the update trains (dynamic sampling: 0 < #correct < G)
    last_round: int  # index of the last round's first group
    rounds: int
    generated: int  # tokens generated in all rounds

    def trained(self) -> np.ndarray:
        """Indices of the trained groups; when none is informative, the last round's (trained with A = 0)."""
        kept = np.flatnonzero(self.keep)
        return kept if kept.size else np.arange(self.last_round, len(self.problems))


def collect(s: Session, step: int, times: PhaseTimer) -> Sampled:
    """P prompts with G graded rollouts each; with dynamic sampling, more rounds of prompts until P groups are
    informative (0 < #correct < G, DAPO Eq. 11) or `max_sampling_rounds` ran out."""
    from benchctl.engine import SamplingConfig

    cfg = s.cfg
    sampling = SamplingConfig(
        n=cfg.group_size,
        temperature=cfg.temperature,
        top_p=cfg.top_p,
        max_tokens=s.max_tokens,
        seed=cfg.seed,
        logprobs=True,
    )
    problems, groups, correct, keep = [], [], [], []
    kept = rounds = generated = last = 0
    while kept < cfg.prompts_per_step and rounds < (cfg.max_sampling_rounds if cfg.dynamic_sampling else 1):
        rounds += 1
        positions = range(s.state.data_pos, s.state.data_pos + cfg.prompts_per_step - kept)
        s.state.data_pos += len(positions)
        batch = [draw(s.problems, cfg.seed, pos) for pos in positions]
        with times("rollout"):
            keys = [f"{step}/{pos}/{p.id}" for pos, p in zip(positions, batch)]
            new = s.engine.generate(
                [s.engine.render(s.task, p) for p in batch], sampling, progress=False, seed_keys=keys
            )
        with times("reward"):
            verdicts = s.task.grade([(p, x.text) for p, group in zip(batch, new) for x in group])
            right = np.array([float(v.correct) for v in verdicts]).reshape(len(batch), cfg.group_size)
        informative = ~group_stats(right).degenerate if cfg.dynamic_sampling else np.ones(len(batch), dtype=bool)
        last, kept = len(problems), kept + int(informative.sum())
        problems, groups = problems + batch, groups + new
        correct.append(right)
        keep.append(informative)
        generated += sum(x.num_tokens for group in new for x in group)
    correct = np.concatenate(correct)  # (S, G)
    with times("reward"):
        lengths = np.array([[x.num_tokens for x in group] for group in groups])  # (S, G)
        penalty = overlong_penalty(lengths, s.max_tokens, resolved_overlong_buffer(cfg), cfg.overlong_penalty)
    return Sampled(problems, groups, correct, penalty, correct + penalty, np.concatenate(keep), last, rounds, generated)


def importance_scores(s: Session, batch, samples) -> tuple[np.ndarray | None, np.ndarray]:
    """(scores, reasoning_mask) for `est.token_advantages`: OAR's scores when the estimator asks for them."""
    kind = s.estimator.token_scores
    width = batch.tokens.shape[1]
    if kind is None:
        return None, np.zeros((len(samples), width), dtype=bool)
    reasoning, answer = answer_masks(
        s.task, [x.text for x in samples], [x.token_ids for x in samples], s.engine.tokenizer, width
    )
    how = Scoring(s.cfg.temperature, s.pad_id, s.cfg.micro_batch_tokens, s.cfg.logprob_chunk_tokens)
    with threads(s.threads), compute_context(s.compute_dtype, s.device):
        scores = SCORERS[kind](s.model, batch, answer, reasoning, how)
    return scores.float().cpu().numpy(), reasoning.numpy()


def measure(s: Session, batch, engine_lp: torch.Tensor, times: PhaseTimer) -> dict[str, float]:
    """policy/entropy, logprob/engine_gap(_max) and the mismatch `rollout_corr/kl_k1|kl_k3|ratio_ess`, token means
    over the first completion of every group (rows 0, G, 2G, ...), forwarded without grad before the update: the
    same rows and the policy the engine sampled from, whatever the estimator, `skip_zero_advantage`, the
    mini-batch structure or the rollout correction."""
    rows = torch.arange(0, batch.tokens.shape[0], s.cfg.group_size, device=batch.tokens.device)  # (P,)
    logp, entropy = torch.zeros(batch.mask[rows].shape), torch.zeros(batch.mask[rows].shape)  # (P, T)
    with times("logprobs"), torch.no_grad(), compute_context(s.compute_dtype, s.device):
        for piece in _pieces(s.cfg, batch.rows(rows)):
            sub = batch.rows(rows[piece]).trim()
            lp, ent = token_logprobs(s.model, sub, s.cfg.temperature, _chunk(s.cfg), entropy=True)
            t = sub.tokens.shape[1]
            logp[piece.cpu(), :t], entropy[piece.cpu(), :t] = lp.float().cpu(), ent.float().cpu()
    mask, engine = batch.mask[rows].float().cpu(), engine_lp[rows].float().cpu()
    tokens, diff = float(mask.sum()), (logp - engine).abs() * mask
    if not tokens:
        return dict.fromkeys(("policy/entropy", "logprob/engine_gap", "logprob/engine_gap_max"), float("nan"))
    return {
        "policy/entropy": float((entropy * mask).sum()) / tokens,
        "logprob/engine_gap": float(diff.sum()) / tokens,
        "logprob/engine_gap_max": float(diff.max()),
        **mismatch_metrics(logp, engine, mask),
    }


def _pieces(cfg, batch) -> list[torch.Tensor]:
    """Row-index tensors, one forward each: token-budget micro-batches with `micro_batch_tokens`, else length
    buckets (both trimmed of their padding columns by the caller)."""
    return token_budget_split(batch, cfg.micro_batch_tokens) if cfg.micro_batch_tokens else length_buckets(batch)


def _chunk(cfg) -> int | None:
    """Positions per vocabulary block of the log-probs (bounded memory) with `micro_batch_tokens`; None = full."""
    return cfg.logprob_chunk_tokens if cfg.micro_batch_tokens else None


def _frozen_logprobs(s: Session, model, batch) -> torch.Tensor:
    """No-grad token log-probs (N, T) of pi_old / the reference, in the compute dtype (bounded when micro-batching)."""
    cfg = s.cfg
    with compute_context(s.compute_dtype, s.device):
        if cfg.micro_batch_tokens:
            return chunked_sequence_logprobs(
                model, batch, cfg.temperature, cfg.micro_batch_tokens, cfg.logprob_chunk_tokens
            )[0]
        return sequence_logprobs(model, batch, cfg.temperature)


def update(
    s: Session, step: int, batch, token_adv: torch.Tensor, nondegenerate: torch.Tensor, engine_lp, times: PhaseTimer
) -> dict[str, float]:
    """epochs x mini-batches of clipped policy-gradient steps on the rollout batch; returns update metrics.
    Mini-batches are capped at the rows (a dynamic-sampling batch may hold fewer), so none is empty. With a rollout
    correction, the token advantages are weighted by `correction_weights(pi_old, engine)` first."""
    cfg = s.cfg
    n = batch.tokens.shape[0]
    splits = min(cfg.mini_batches, n)
    active = (
        active_rows(token_adv, batch.mask, cfg.kl_coef)
        if cfg.skip_zero_advantage
        else torch.ones(n, dtype=torch.bool, device=token_adv.device)
    )  # (N,)
    old = ref = None
    out: dict[str, float] = {}
    with times("logprobs"):
        if cfg.epochs * splits > 1 or s.correction.mode != "none":  # off-policy or corrected: freeze pi_old first
            old = torch.zeros_like(batch.mask)
            old[active] = _frozen_logprobs(s, s.model, batch.rows(active.nonzero().squeeze(1)))
        if s.ref is not None:
            ref = _frozen_logprobs(s, s.ref, batch)
    if s.correction.mode != "none":  # spec: the weights change the measure (detached), on the trained rows
        weights, m = correction_weights(old, engine_lp, batch.mask * active[:, None], s.correction)
        token_adv = token_adv * weights  # (N, T)
        out.update({k: float(v) for k, v in m.items() if not k.startswith("rollout_corr/kl")})  # kl: `measure`
    old = old if cfg.epochs * splits > 1 else None  # one step per batch: ratio exactly 1 (the loss detaches logp)
    sums: dict[str, float] = {}
    generator = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step)
    with times("update"):
        before = param_snapshot(s.model, s.param_stride)
        for _ in range(cfg.epochs):
            order = torch.randperm(n, generator=generator) if splits > 1 else torch.arange(n)
            for mb in torch.tensor_split(order.to(token_adv.device), splits):
                for key, value in _minibatch_step(s, batch, mb, active[mb], token_adv, nondegenerate, old, ref).items():
                    sums[key] = sums.get(key, 0.0) + value
        s.scheduler.step()
        out["update/param_change"] = float(param_change(s.model, before, s.param_stride))
    out.update({k: v / (cfg.epochs * splits) for k, v in sums.items()})
    out["update/optimizer_steps"] = float(cfg.epochs * splits)
    out["update/rows_trained"] = float(active.sum())
    out["update/rows_skipped"] = float(n - active.sum())
    return out


def _minibatch_step(s: Session, batch, mb, mb_active, token_adv, nondegenerate, old, ref) -> dict[str, float]:
    """One optimizer step on mini-batch `mb` (row indices): its active rows are forwarded in pieces (`_pieces`:
    length buckets, or token-budget micro-batches), each trimmed of its padding columns, the forward and loss in
    the compute dtype; the pieces' losses (sums over rows) accumulate one gradient. Returns the step's loss
    metrics and `policy/grad_norm`."""
    cfg = s.cfg
    weights = aggregation_weights(batch.mask[mb], s.agg, nondegenerate[mb], s.max_tokens)[mb_active]  # ALL rows
    rows = mb[mb_active]
    # zero (not None) grads: an all-skipped mini-batch steps AdamW on zeros (momentum moves the weights); a resumed
    # run gets the same zero grads from checkpoint.load_optimizer
    s.optimizer.zero_grad(set_to_none=False)
    parts = []
    for piece in _pieces(cfg, batch.rows(rows)):  # none when every row is skipped
        sub, idx = batch.rows(rows[piece]).trim(), rows[piece]
        t = sub.tokens.shape[1]
        with compute_context(s.compute_dtype, s.device):
            logp, _ = token_logprobs(s.model, sub, cfg.temperature, _chunk(cfg))  # (b, t)
            loss, m = policy_loss(
                logp,
                logp.detach() if old is None else old[idx, :t],
                token_adv[idx, :t],
                weights[piece, :t],
                sub.mask,
                clip_low=cfg.clip_low,
                clip_high=cfg.clip_high,
                ratio=cfg.ratio,
                kl_coef=cfg.kl_coef,
                ref_logp=None if ref is None else ref[idx, :t],
            )
        loss.backward()
        parts.append((m, float(sub.mask.sum())))
    metrics = dict(combine_metrics(parts))
    max_norm = cfg.max_grad_norm if cfg.max_grad_norm > 0 else float("inf")
    metrics["policy/grad_norm"] = float(torch.nn.utils.clip_grad_norm_(s.model.parameters(), max_norm))
    s.optimizer.step()
    return metrics


def _after_step(s: Session, step: int, row: dict) -> None:
    """Metrics file, display, then checkpoint / held-out eval on their cadence."""
    cfg = s.cfg
    last = step >= cfg.steps or _budget_spent(s)
    if eval_due(cfg, step, row["rollout/tokens_total"] - row["rollout/tokens"], row["rollout/tokens_total"], last):
        start = time.perf_counter()
        row.update(evaluate(s, step))
        row["time/eval"] = time.perf_counter() - start
    train_run.write_train_metrics(s.run, s.state.metrics)
    s.trackers.log(step, row)
    s.display.update(step, row)
    if (cfg.save_every and step % cfg.save_every == 0) or last or s.stop_requested:
        save_checkpoint(s)


def _budget_spent(s: Session) -> bool:
    return s.cfg.token_budget is not None and s.state.tokens_total >= s.cfg.token_budget


def _finish(s: Session) -> None:
    """The final model folder (the last checkpoint was written by `_after_step`)."""
    if s.state.step:
        export_final_model(s)
