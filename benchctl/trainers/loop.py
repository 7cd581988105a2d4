"""`benchctl train`: the RLVR training loop, one step read top to bottom.

    rollout    the in-process vLLM engine samples G completions for each of P prompts, seeded per prompt from
               (seed, step, data position, problem id), with each sampled token's log-probability
    reward     the task's own grader: 1.0 for a correct completion, else 0.0
    advantage  one registry call: est.advantages(rewards) (P, G), then est.token_advantages(...) (N, T)
    loss       clipped surrogate (token ratio, or GSPO's sequence ratio) + optional k3 KL, aggregated (spec §6)
    update     epochs x mini-batches of AdamW with gradient clipping, on every core (`policy.threads`)
    sync       engine.load_weights(policy weights)
    log        metrics row, rollouts part, live display; checkpoint and held-out eval on their cadence

The trainer never branches on an estimator's name: what an estimator needs (OAR's importance scores) it asks
for through `est.token_scores`. Rows whose token advantages are all zero (degenerate groups) are left out of
the forward/backward when no KL term needs them; the aggregation weights still count them, so the loss and
gradient are exactly those of the full batch (`losses.active_rows`). That is where most of the speed comes
from once the policy learns: ACR grows, and so does the work skipped.
"""

from __future__ import annotations

import contextlib
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from benchctl.estimators._common import group_stats
from benchctl.results import train_run
from benchctl.trainers import metrics as M
from benchctl.trainers.config import TrainConfig, parse_eval_ks
from benchctl.trainers.losses import active_rows, aggregation_weights, combine_metrics, policy_loss, token_entropy
from benchctl.trainers.policy import (
    completion_logits,
    deterministic,
    engine_state_dict,
    gather_logprobs,
    length_buckets,
    pack,
    sequence_logprobs,
    threads,
)
from benchctl.trainers.scores import SCORERS, answer_masks
from benchctl.trainers.session import Session, draw, export_final_model, open_session, save_checkpoint


@dataclass(frozen=True)
class TrainResult:
    """What `train` returns (nothing is printed by the library)."""

    run: Path
    steps: int  # last finished step
    metrics: tuple[dict, ...]
    interrupted: bool  # stopped by Ctrl-C (after writing a checkpoint)


class PhaseTimer(dict):
    """Seconds per phase: `with times("rollout"): ...` adds to times["rollout"]."""

    @contextlib.contextmanager
    def __call__(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            self[name] = self.get(name, 0.0) + time.perf_counter() - start


def train(cfg: TrainConfig, display=None) -> TrainResult:
    """Run (or resume) one training run; returns when `cfg.steps` or `cfg.token_budget` is reached."""
    s = open_session(cfg)
    if display is not None:
        s.display = display
    with _stop_on_sigint(s), s.display:
        if cfg.eval_every and s.state.step == 0:  # the starting point, for before/after comparisons
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
    # ---- rollout + reward (DAPO dynamic sampling repeats both until the batch is full) -------------------
    problems, groups, rewards, sampled, rounds, generated = collect(s, step, times)
    samples = [x for group in groups for x in group]  # N = P * G rollouts, group-major
    # ---- advantage ----------------------------------------------------------------------------------------
    with times("advantage"):
        seq_adv = s.estimator.advantages(rewards)  # (P, G): the one registry call
        batch = pack([x.prompt_token_ids for x in samples], [x.token_ids for x in samples], s.pad_id, s.device)
        scores, reasoning = importance_scores(s, batch, samples)
        token_adv = s.estimator.token_advantages(seq_adv.reshape(-1), scores, reasoning)  # (N, T)
    token_adv = torch.as_tensor(token_adv, dtype=torch.float32, device=s.device)
    nondegenerate = torch.as_tensor(np.repeat(~group_stats(rewards).degenerate, cfg.group_size), device=s.device)
    engine_lp = _engine_logprobs(samples, batch)
    # ---- loss + update ------------------------------------------------------------------------------------
    s.engine.sleep()
    with threads(s.threads), deterministic(s.device == "cpu"):  # same seed, same bits (policy.deterministic)
        update_metrics = update(s, step, batch, token_adv, nondegenerate, engine_lp, times)
    # ---- sync ---------------------------------------------------------------------------------------------
    with times("sync"):
        s.engine.wake_up()
        s.engine.load_weights(engine_state_dict(s.model))
    # ---- log ----------------------------------------------------------------------------------------------
    num_tokens = np.array([x.num_tokens for x in samples])
    s.state.tokens_total += generated  # every rollout generated, DAPO's dropped groups included (compute spent)
    s.state.samples_total += sampled.size
    train_run.write_rollouts(
        s.run,
        step,
        train_run.rollout_table(
            step,
            [p.id for p in problems],
            rewards,
            seq_adv,
            num_tokens,
            [x.finish_reason for x in samples],
            [x.text for x in samples],
        ),
    )
    row = {
        "step": step,
        **M.reward_metrics(rewards, sampled),
        **M.estimator_metrics(s.estimator.diagnostics()),
        **M.advantage_metrics(seq_adv),
        **update_metrics,
        **M.response_metrics(num_tokens, np.array([x.finish_reason == "length" for x in samples])),
        "rollout/tokens": generated,
        "rollout/tokens_total": s.state.tokens_total,
        "rollout/samples_total": s.state.samples_total,
        "rollout/rounds": rounds,
        "optim/lr": s.scheduler.get_last_lr()[0],
    }
    row.update({f"time/{k}": v for k, v in times.items()})
    row["time/step"] = time.perf_counter() - start
    return row


def collect(s: Session, step: int, times: PhaseTimer):
    """P prompts with G graded rollouts each -> (problems, groups, rewards (P, G), rewards of every group sampled,
    rounds, tokens generated in all rounds)."""
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
    kept: list[tuple] = []  # (problem, samples, rewards (G,))
    seen, last, rounds, generated = [], [], 0, 0
    while len(kept) < cfg.prompts_per_step and rounds < (cfg.max_sampling_rounds if cfg.dynamic_sampling else 1):
        rounds += 1
        positions = range(s.state.data_pos, s.state.data_pos + cfg.prompts_per_step - len(kept))
        s.state.data_pos += len(positions)
        problems = [draw(s.problems, cfg.seed, pos) for pos in positions]
        with times("rollout"):
            keys = [f"{step}/{pos}/{p.id}" for pos, p in zip(positions, problems)]
            groups = s.engine.generate(
                [s.engine.render(s.task, p) for p in problems], sampling, progress=False, seed_keys=keys
            )
        with times("reward"):
            verdicts = s.task.grade([(p, x.text) for p, group in zip(problems, groups) for x in group])
            rewards = np.array([float(v.correct) for v in verdicts]).reshape(len(problems), cfg.group_size)
        seen.append(rewards)
        generated += sum(x.num_tokens for group in groups for x in group)
        last = list(zip(problems, groups, rewards))
        keep = ~group_stats(rewards).degenerate if cfg.dynamic_sampling else np.ones(len(problems), dtype=bool)
        kept += [item for item, k in zip(last, keep) if k]
    kept = kept or last  # dynamic sampling found no informative group: train on the last round (a no-op update)
    problems, groups, rewards = zip(*kept)
    return list(problems), list(groups), np.stack(rewards), np.concatenate(seen), rounds, generated


def importance_scores(s: Session, batch, samples) -> tuple[np.ndarray | None, np.ndarray]:
    """(scores, reasoning_mask) for `est.token_advantages`: OAR's scores when the estimator asks for them."""
    kind = s.estimator.token_scores
    width = batch.tokens.shape[1]
    if kind is None:
        return None, np.zeros((len(samples), width), dtype=bool)
    reasoning, answer = answer_masks(
        s.task, [x.text for x in samples], [x.token_ids for x in samples], s.engine.tokenizer, width
    )
    with threads(s.threads):
        scores = SCORERS[kind](s.model, batch, answer, reasoning, s.cfg.temperature, s.pad_id)
    return scores.float().cpu().numpy(), reasoning.numpy()


def _engine_logprobs(samples, batch) -> torch.Tensor:
    """The engine's log-probability of each sampled token (N, T), 0 on padding."""
    out = torch.zeros(batch.tokens.shape, dtype=torch.float32)
    for i, x in enumerate(samples):
        if x.logprobs:
            out[i, : len(x.logprobs)] = torch.tensor(x.logprobs, dtype=torch.float32)
    return out.to(batch.tokens.device)


def update(
    s: Session,
    step: int,
    batch,
    token_adv: torch.Tensor,
    nondegenerate: torch.Tensor,
    engine_lp: torch.Tensor,
    times: PhaseTimer,
) -> dict[str, float]:
    """epochs x mini-batches of clipped policy-gradient steps on the rollout batch; returns update metrics."""
    cfg = s.cfg
    n = batch.tokens.shape[0]
    active = (
        active_rows(token_adv, batch.mask, cfg.kl_coef)
        if cfg.skip_zero_advantage
        else torch.ones(n, dtype=torch.bool, device=token_adv.device)
    )  # (N,)
    old = ref = None
    with times("logprobs"):
        if cfg.epochs * cfg.mini_batches > 1:  # off-policy after the first mini-batch: freeze pi_old first
            old = torch.zeros_like(batch.mask)
            old[active] = sequence_logprobs(s.model, batch.rows(active.nonzero().squeeze(1)), cfg.temperature)
        if s.ref is not None:
            ref = sequence_logprobs(s.ref, batch, cfg.temperature)
    sums: dict[str, float] = {}
    generator = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step)
    with times("update"):
        for epoch in range(cfg.epochs):
            order = torch.randperm(n, generator=generator) if cfg.mini_batches > 1 else torch.arange(n)
            for mb in torch.tensor_split(order.to(token_adv.device), cfg.mini_batches):
                first = epoch == 0
                _minibatch_step(s, batch, mb, active[mb], token_adv, nondegenerate, old, ref, engine_lp, first, sums)
        s.scheduler.step()
    steps = cfg.epochs * cfg.mini_batches
    out = {k: v / steps for k, v in sums.items() if not k.startswith("_")}
    tokens = sums.get("_tokens", 0.0)  # real tokens of the rows trained in the first epoch; none -> NaN
    out["policy/entropy"] = sums["_entropy"] / tokens if tokens else float("nan")
    out["logprob/engine_gap"] = sums["_gap"] / tokens if tokens else float("nan")
    out["logprob/engine_gap_max"] = sums.get("_gap_max", float("nan"))
    out["update/rows_trained"] = float(active.sum())
    out["update/rows_skipped"] = float(n - active.sum())
    _warn_on_gap(s, step, out["logprob/engine_gap"])
    return out


def _minibatch_step(
    s: Session, batch, mb, mb_active, token_adv, nondegenerate, old, ref, engine_lp, first, sums: dict
) -> None:
    """One optimizer step on mini-batch `mb` (row indices): its active rows are forwarded in `length_buckets`,
    each trimmed of its padding columns; the buckets' losses (sums over rows) accumulate one gradient."""
    cfg = s.cfg
    weights = aggregation_weights(batch.mask[mb], s.agg, nondegenerate[mb], s.max_tokens)[mb_active]  # ALL rows
    rows = mb[mb_active]
    # zero (not None) grads: an all-skipped mini-batch steps AdamW on zeros (momentum moves the weights); a resumed
    # run gets the same zero grads from checkpoint.load_optimizer
    s.optimizer.zero_grad(set_to_none=False)
    parts = []
    for bucket in length_buckets(batch.rows(rows)):  # none when every row is skipped
        sub, idx = batch.rows(rows[bucket]).trim(), rows[bucket]
        t, tokens = sub.tokens.shape[1], float(sub.mask.sum())
        logits = completion_logits(s.model, sub, cfg.temperature)  # (b, t, V)
        logp = gather_logprobs(logits, sub.tokens)  # (b, t)
        loss, m = policy_loss(
            logp,
            logp.detach() if old is None else old[idx, :t],
            token_adv[idx, :t],
            weights[bucket, :t],
            sub.mask,
            clip_low=cfg.clip_low,
            clip_high=cfg.clip_high,
            ratio=cfg.ratio,
            kl_coef=cfg.kl_coef,
            ref_logp=None if ref is None else ref[idx, :t],
        )
        loss.backward()
        parts.append((m, tokens))
        if first:
            with torch.no_grad():
                gap = (logp.detach() - engine_lp[idx, :t]).abs() * sub.mask
                sums["_entropy"] = sums.get("_entropy", 0.0) + float((token_entropy(logits.detach()) * sub.mask).sum())
                sums["_gap"] = sums.get("_gap", 0.0) + float(gap.sum())
                sums["_gap_max"] = max(sums.get("_gap_max", 0.0), float(gap.max()))
                sums["_tokens"] = sums.get("_tokens", 0.0) + tokens
    for key, value in combine_metrics(parts).items():
        sums[key] = sums.get(key, 0.0) + value
    max_norm = cfg.max_grad_norm if cfg.max_grad_norm > 0 else float("inf")
    norm = torch.nn.utils.clip_grad_norm_(s.model.parameters(), max_norm)
    sums["policy/grad_norm"] = sums.get("policy/grad_norm", 0.0) + float(norm)
    s.optimizer.step()


def _warn_on_gap(s: Session, step: int, gap: float) -> None:
    """Warn when the engine/policy log-prob gap jumps: the engine is likely sampling with stale weights."""
    history = [
        r["logprob/engine_gap"] for r in s.state.metrics[-20:] if np.isfinite(r.get("logprob/engine_gap", np.nan))
    ]
    if history and np.isfinite(gap) and gap > max(1e-3, 10 * float(np.median(history))):
        s.display.warn(
            f"step {step}: engine/policy log-prob gap {gap:.2e} jumped (median {np.median(history):.1e});"
            " stale engine weights?"
        )


def _after_step(s: Session, step: int, row: dict) -> None:
    """Metrics file, display, then checkpoint / held-out eval on their cadence."""
    cfg = s.cfg
    last = step >= cfg.steps or _budget_spent(s)
    if cfg.eval_every and (step % cfg.eval_every == 0 or last):
        start = time.perf_counter()
        row.update(evaluate(s, step))
        row["time/eval"] = time.perf_counter() - start
    train_run.write_train_metrics(s.run, s.state.metrics)
    s.display.update(step, row)
    if (cfg.save_every and step % cfg.save_every == 0) or last or s.stop_requested:
        save_checkpoint(s)


def evaluate(s: Session, step: int) -> dict[str, float]:
    """Held-out pass@k of the current policy through the `benchctl eval` code path, on the training engine."""
    from benchctl.evaluation import EvalConfig, run_eval

    cfg = s.cfg
    config = EvalConfig(
        model=str(s.run),
        tasks=(s.eval_task,),
        ks=parse_eval_ks(cfg.eval_k),
        n=cfg.eval_n,
        temperature=cfg.eval_temperature,
        top_p=1.0,
        max_tokens=s.max_tokens,
        seed=cfg.seed,
        limit=cfg.eval_limit,
        data_dir=cfg.data_dir,
        out=str(train_run.eval_dir(s.run, step)),
        progress=False,
    )
    result = run_eval(config, engine=s.engine)
    summary = result.tasks[0].summary.to_pydict()
    out = {f"eval/pass@{k}": v for k, v in zip(summary["k"], summary["pass_at_k"])}
    out.update({f"eval/pass@{k}_low": v for k, v in zip(summary["k"], summary["pass_at_k_low"])})
    out.update({f"eval/pass@{k}_high": v for k, v in zip(summary["k"], summary["pass_at_k_high"])})
    return out


def _budget_spent(s: Session) -> bool:
    return s.cfg.token_budget is not None and s.state.tokens_total >= s.cfg.token_budget


def _finish(s: Session) -> None:
    """The final model folder (the last checkpoint was written by `_after_step`)."""
    if s.state.step:
        export_final_model(s)


@contextlib.contextmanager
def _stop_on_sigint(s: Session):
    """First Ctrl-C: finish the current step, write a checkpoint, stop. A second one interrupts at once."""

    def handler(signum, frame):
        if s.stop_requested:
            raise KeyboardInterrupt
        s.stop_requested = True
        s.display.warn("Ctrl-C: stopping after this step (checkpoint follows); press again to abort")

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread: no handler, default behaviour
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
