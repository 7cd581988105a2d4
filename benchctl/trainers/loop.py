"""`benchctl train`: the RLVR training loop, one step read top to bottom.

    rollout    the in-process vLLM engine samples G completions for each of P prompts, seeded per prompt from
               (seed, step, data position, problem id), with each sampled token's log-probability
    reward     the task's own grader: 1.0 for a correct completion, else 0.0; plus DAPO's overlong penalty (Eq. 13,
               `shaping.overlong_penalty`) when on. Dynamic sampling repeats rollout + reward until P groups are
               informative by correctness (0 < #correct < G)
    advantage  one registry call: est.advantages(rewards) on every group sampled this step (all rounds, so batch
               statistics and state see the policy's actual batch), then the filter keeps the informative groups
               for the update; est.token_advantages(...) (N, T) of those
    loss       one registry call: the run's policy loss (`benchctl.losses`: ppo_clip by default, gspo, cispo, sapo,
               ...) + optional k3 KL, aggregated by per-token weights over the mini-batch (docs/training.md);
               forward in `--dtype` over fp32 weights, in token-budget micro-batches with `--micro-batch-tokens`,
               advantages weighted by `--rollout-correction` (engine/trainer mismatch) when on
    update     epochs x mini-batches of AdamW with gradient clipping, on every core (`device.threads`)
    sync       the engine, asleep on a GPU since the advantage (`Engine.asleep`: woken also when a step raises),
               wakes up; engine.load_weights(policy weights), verified on a probe sequence (`sync.check_sync`)
    log        metrics row, rollouts part, live display; checkpoint and held-out eval on their cadence

The trainer never branches on an estimator's or a loss's name: an estimator asks for OAR's importance scores through
`est.token_scores`, computed for the rows with a non-zero advantage only (token advantages are A x w, contract.md §7).
Rows whose token advantages are all zero are left out of the forward/backward when no KL term needs them; the
aggregation weights still count them, so loss and gradient are those of the full batch (`Objective.active_rows`): most
of the speed once ACR grows. Entropy and the engine/policy gap are measured on rows chosen without looking at
advantages (`measure`), so every arm is measured alike.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

from benchctl.estimators._common import group_stats
from benchctl.losses.aggregation import aggregation_weights
from benchctl.results import train_run
from benchctl.trainers import metrics as M
from benchctl.trainers.batch import pack, pieces, sampled_logprobs
from benchctl.trainers.build import Objective, Policy, Sampler, build, draw
from benchctl.trainers.config import TrainConfig, eval_due
from benchctl.trainers.device import compute_context, deterministic, threads
from benchctl.trainers.focus import estimator_inputs, next_focus, seed_keys
from benchctl.trainers.heldout import evaluate
from benchctl.trainers.policy import STATS, chunked_sequence_logprobs, forward_stats, piecewise_stats, sequence_logprobs
from benchctl.trainers.rollout_correction import correction, mismatch_metrics
from benchctl.trainers.run_folder import TrainState, resume_step
from benchctl.trainers.runtime import PhaseTimer, stop_on_sigint
from benchctl.trainers.scores import SCORERS, Scoring, score_masks
from benchctl.trainers.shaping import noisy_verifier, overlong_penalty
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
    from benchctl.trainers.display import NullDisplay

    folder, state, sampler, policy, loss, est, probe, trackers, plan = build(cfg)
    cfg = plan.cfg  # as resolved for the device (trainers/memory.py: micro_batch_tokens chosen for the card)
    display = display if display is not None else NullDisplay()
    with trackers, stop_on_sigint(display) as stop, display:  # trackers closed at the end, on Ctrl-C and on errors
        if cfg.evaluates and state.step == 0:  # the starting point, for before/after comparisons
            evaluate(plan, sampler.engine, folder.path, 0)
        while state.step < cfg.steps and not _budget_spent(cfg, state) and not stop.requested:
            state, row, rollouts = train_step(cfg, sampler, policy, loss, est, probe, state)
            # ---- log: rollouts, held-out eval on its cadence, metrics, trackers, display, checkpoint --------
            folder.write_rollouts(state.step, rollouts)
            last = state.step >= cfg.steps or _budget_spent(cfg, state)
            if eval_due(cfg, state.step, state.tokens_total - row["rollout/tokens"], state.tokens_total, last):
                start = time.perf_counter()
                row.update(evaluate(plan, sampler.engine, folder.path, state.step))
                row["time/eval"] = time.perf_counter() - start
            folder.log(row)
            trackers.log(state.step, row)
            display.update(state.step, row)
            if (cfg.save_every and state.step % cfg.save_every == 0) or last or stop.requested:
                folder.checkpoint(state, policy=policy, estimator=est)
    if stop.requested and resume_step(folder.path) != state.step:
        folder.checkpoint(state, policy=policy, estimator=est)  # Ctrl-C came between the cadence check and the test
    if not stop.requested and state.step:
        folder.export_model(policy)  # the final model folder (its last checkpoint was written above)
    return TrainResult(folder.path, state.step, tuple(folder.metrics), stop.requested)


def train_step(
    cfg: TrainConfig, sampler: Sampler, policy: Policy, loss: Objective, est, probe, state: TrainState
) -> tuple[TrainState, dict[str, float], pa.Table]:
    """Step `state.step + 1`: rollout -> reward -> advantage -> loss/update -> sync -> (counters, metrics row,
    rollouts table) out; the policy, the engine's weights and the estimator's cross-step state move with it."""
    times, start, step = PhaseTimer(), time.perf_counter(), state.step + 1
    # ---- rollout + reward (DAPO dynamic sampling repeats both until enough groups are informative) ---------
    got = collect(sampler, step, state.data_pos, times, state.focus)  # focus: CoDaPO's re-rolled questions
    # the engine sleeps from here to the sync (KV cache freed), and wakes up also when scoring or the update raises
    with sampler.engine.asleep(wake_timer=times("sync")):
        # ---- advantage ------------------------------------------------------------------------------------
        with times("advantage"):
            inputs = estimator_inputs(got.problems, got.groups)  # prompt ids, mean log-prob per rollout
            seq_adv = est.advantages(got.rewards, **inputs)  # (S, G): the one registry call, every group sampled
            trained = got.trained()  # (P,) the groups the update trains (the filter comes after the estimator)
            samples = [x for i in trained for x in got.groups[i]]  # N = P * G rollouts, group-major
            prompts, completions = [x.prompt_token_ids for x in samples], [x.token_ids for x in samples]
            batch = pack(prompts, completions, policy.pad_id, policy.device)
            kept_adv = (seq_adv[trained] * got.keep[trained, None]).reshape(-1)  # (N,); dropped group: A = 0
            token_adv, scored = np.zeros(batch.tokens.shape), np.flatnonzero(kept_adv)  # (N, T); rows with A != 0
            degenerate = group_stats(got.rewards[trained]).degenerate  # (P,)
            if scored.size:  # a row with A = 0 has token advantages A x w = 0 (§7): no scores, no weights
                scores, reasoning = importance_scores(cfg, sampler, policy, est.token_scores, batch, samples, scored)
                flat = np.repeat(degenerate, cfg.group_size)[scored]  # (n,) rows of all-equal groups (RL-ZVP)
                token_adv[scored] = est.token_advantages(kept_adv[scored], scores, reasoning, flat)  # (n, T)
        token_adv = torch.as_tensor(token_adv, dtype=torch.float32, device=policy.device)
        nondegenerate = torch.as_tensor(np.repeat(~degenerate, cfg.group_size), device=policy.device)
        engine_lp = sampled_logprobs(samples, batch)
        # ---- loss + update --------------------------------------------------------------------------------
        with threads(policy.threads), deterministic(policy.device == "cpu"):  # same seed, same bits
            diagnostics, proxy_rows = measure(cfg, policy, batch, engine_lp, token_adv, times)
            update_metrics = update(cfg, policy, loss, step, batch, token_adv, nondegenerate, engine_lp, times)
    # ---- sync (the wake-up above is timed in it) ----------------------------------------------------------
    with times("sync"):
        sampler.engine.load_weights(engine_state_dict(policy.model))
    with times("sync_check"):  # independent of the sync code: the engine now scores a probe as the policy does
        diagnostics["sync/probe_gap"] = check_sync(sampler.engine, policy, probe, step)
    # ---- log ----------------------------------------------------------------------------------------------
    every = [x for group in got.groups for x in group]  # every rollout sampled this step, dropped groups included
    num_tokens = np.array([x.num_tokens for x in every])
    focus = next_focus(sampler, got.rewards, inputs["seq_logprob"], got.positions, state.focus)  # CoDaPO's sampler
    state = TrainState(
        step, got.data_pos, state.tokens_total + got.generated, state.samples_total + got.rewards.size, focus
    )
    row = {
        "step": step,
        **M.reward_metrics(got.correct, got.rewards),  # accuracy; acr/* of what the estimator saw (= est/acr)
        "reward/overlong_penalty": float(got.penalty.mean()),
        **M.estimator_metrics(est.diagnostics()),
        **M.mechanism_metrics({**got.acted, **est.mechanisms(), **loss.policy_loss.mechanisms(update_metrics)}),
        **M.advantage_metrics(kept_adv),
        **diagnostics,
        **update_metrics,
        **M.variance_proxy(*proxy_rows, update_metrics["policy/grad_norm"], len(samples)),
        **M.response_metrics(num_tokens, np.array([x.finish_reason == "length" for x in every])),
        **got.rollout_metrics(state),
        "optim/lr": policy.scheduler.get_last_lr()[0],
    }
    row.update({**{f"time/{k}": v for k, v in times.items()}, "time/step": time.perf_counter() - start})
    return state, row, got.rollout_table(step, seq_adv)


@dataclass(frozen=True)
class Sampled:
    """Every group sampled in one step (all rounds of dynamic sampling), in sampling order: S groups of G."""

    problems: list
    groups: list  # S lists of G completions
    correct: np.ndarray  # (S, G) 1.0 correct, else 0.0 (the task's grader): reward/mean is their mean
    penalty: np.ndarray  # (S, G) DAPO's overlong penalty (Eq. 13, `shaping.overlong_penalty`); 0 when off
    rewards: np.ndarray  # (S, G) verdict (flipped by `reward_flip`) + penalty: what estimator and filter see
    keep: np.ndarray  # (S,) bool: the groups the update trains (dynamic sampling: 0 < #correct < G)
    last_round: int  # index of the last round's first group
    rounds: int
    generated: int  # tokens generated in all rounds
    data_pos: int  # the data order's position after this step's prompts
    acted: dict  # the sampler's mechanisms that are on, each 1.0 when it changed something this step, else 0.0
    positions: tuple = ()  # (S,) each group's position in the data order

    def rollout_metrics(self, state: TrainState) -> dict[str, float]:
        """rollout/*: tokens generated this step and so far, samples so far, sampling rounds, groups sampled/kept."""
        return {
            "rollout/tokens": self.generated,
            "rollout/tokens_total": state.tokens_total,
            "rollout/samples_total": state.samples_total,
            "rollout/rounds": self.rounds,
            "rollout/groups": len(self.problems),
            "rollout/groups_trained": float(self.keep.sum()),
        }

    def rollout_table(self, step: int, advantages: np.ndarray) -> pa.Table:
        """RUN/rollouts' part of this step: every group sampled (the estimator's batch), reward and advantage."""
        every = [x for group in self.groups for x in group]
        return train_run.rollout_table(
            step, [p.id for p in self.problems], self.rewards, advantages, np.array([x.num_tokens for x in every]),
            [x.finish_reason for x in every], [x.text for x in every],
        )  # fmt: skip

    def trained(self) -> np.ndarray:
        """Indices of the trained groups; when none is informative, the last round's (trained with A = 0)."""
        kept = np.flatnonzero(self.keep)
        return kept if kept.size else np.arange(self.last_round, len(self.problems))


def collect(sampler: Sampler, step: int, data_pos: int, times: PhaseTimer, focus: tuple = ()) -> Sampled:
    """P prompts from `data_pos` on (a CoDaPO focus step: the data positions `focus`, `trainers.focus`) with G graded
    rollouts each; with dynamic sampling, more rounds of prompts until P groups are informative (0 < #correct < G,
    DAPO Eq. 11) or `max_rounds` ran out."""
    want, g = sampler.prompts_per_step, sampler.sampling.n
    problems, groups, correct, verified, keep, spots = [], [], [], [], [], ()
    kept = rounds = generated = last = 0
    while kept < want and rounds < sampler.max_rounds:
        rounds += 1
        positions = tuple(focus) or tuple(range(data_pos, data_pos + want - kept))
        data_pos += 0 if focus else len(positions)
        batch = [draw(sampler.problems, sampler.seed, pos) for pos in positions]
        with times("rollout"):
            keys = seed_keys(step, positions, batch)
            prompts = [sampler.engine.render(sampler.task, p) for p in batch]
            new = sampler.engine.generate(prompts, sampler.sampling, progress=False, seed_keys=keys)
        with times("reward"):
            verdicts = sampler.task.grade([(p, x.text) for p, group in zip(batch, new) for x in group])
            right = np.array([float(v.correct) for v in verdicts]).reshape(len(batch), g)
            said = noisy_verifier(right, sampler.reward_flip, (sampler.seed, step, positions[0]))
        informative = ~group_stats(said).degenerate if sampler.dynamic_sampling else np.ones(len(batch), dtype=bool)
        last, kept = len(problems), kept + int(informative.sum())
        problems, groups, spots = problems + batch, groups + new, spots + positions
        correct.append(right)
        verified.append(said)
        keep.append(informative)
        generated += sum(x.num_tokens for group in new for x in group)
    correct, verified = np.concatenate(correct), np.concatenate(verified)  # (S, G) each
    with times("reward"):
        lengths = np.array([[x.num_tokens for x in group] for group in groups])  # (S, G)
        max_tokens = sampler.sampling.max_tokens
        penalty = overlong_penalty(lengths, max_tokens, sampler.overlong_buffer, sampler.overlong_penalty)
    keep = np.concatenate(keep)
    acted = {  # the evidence that each mechanism that is on did something this step (`mechanism/<name>/acted`)
        **({"dynamic_sampling": float(not keep.all())} if sampler.dynamic_sampling else {}),
        **({"overlong_shaping": float((penalty != 0).any())} if sampler.overlong_buffer else {}),
        **({"reward_flip": float((verified != correct).any())} if sampler.reward_flip else {}),
        **({"codapo_resample": float(bool(focus))} if sampler.focus_quantile is not None else {}),
    }
    return Sampled(
        problems, groups, correct, penalty, verified + penalty, keep, last, rounds, generated, data_pos, acted, spots
    )


def importance_scores(
    cfg: TrainConfig, sampler: Sampler, policy: Policy, kind: str | None, batch, samples, rows: np.ndarray
) -> tuple[np.ndarray | None, np.ndarray]:
    """(scores, reasoning) (n, T) of `rows` for `est.token_advantages`; scores None unless `kind` names a scorer."""
    width = batch.tokens.shape[1]
    if kind is None:
        return None, np.zeros((len(rows), width), dtype=bool)
    batch, samples = batch.rows(torch.as_tensor(rows, device=batch.tokens.device)), [samples[i] for i in rows]
    texts, ids = [x.text for x in samples], [x.token_ids for x in samples]
    reasoning, answer = score_masks(kind, sampler.task, texts, ids, sampler.engine.tokenizer, batch.mask)
    how = Scoring(cfg.temperature, policy.pad_id, cfg.micro_batch_tokens, cfg.logprob_chunk_tokens)
    with threads(policy.threads), compute_context(policy.compute_dtype, policy.device):
        scores = SCORERS[kind](policy.model, batch, answer, reasoning, how)
    return scores.float().cpu().numpy(), reasoning.numpy()


def measure(
    cfg: TrainConfig, policy: Policy, batch, engine_lp: torch.Tensor, token_adv: torch.Tensor, times: PhaseTimer
) -> tuple[dict[str, float], tuple[np.ndarray, ...]]:
    """policy/entropy, logprob/engine_gap(_max) and the mismatch `rollout_corr/kl_k1|kl_k3|ratio_ess`, token means
    over the first completion of every group (rows 0, G, 2G, ...), forwarded without grad before the update: the
    same rows and the policy the engine sampled from, whatever the estimator, `skip_zero_advantage`, the
    mini-batch structure or the rollout correction. Also returns those rows' (log-prob, sum pi^2, advantage, mask)
    arrays for the variance proxy (`metrics.variance_proxy`), which needs the update's gradient norm."""
    rows = torch.arange(0, batch.tokens.shape[0], cfg.group_size, device=batch.tokens.device)  # (P,)
    with times("logprobs"), compute_context(policy.compute_dtype, policy.device):
        stats = piecewise_stats(
            policy.model, batch.rows(rows), cfg.temperature, want=STATS, micro_batch_tokens=cfg.micro_batch_tokens,
            chunk=_chunk(cfg),
        )  # fmt: skip
        logp, entropy, sum_sq = (x.float().cpu() for x in (stats.logprobs, stats.entropy, stats.sum_sq))  # (P, T)
    mask, engine = batch.mask[rows].float().cpu(), engine_lp[rows].float().cpu()
    proxy_rows = (logp.numpy(), sum_sq.numpy(), token_adv[rows].float().cpu().numpy(), mask.numpy())
    tokens, diff = float(mask.sum()), (logp - engine).abs() * mask
    if not tokens:
        keys = ("policy/entropy", "logprob/engine_gap", "logprob/engine_gap_max")
        return dict.fromkeys(keys, float("nan")), proxy_rows
    return {
        "policy/entropy": float((entropy * mask).sum()) / tokens,
        "logprob/engine_gap": float(diff.sum()) / tokens,
        "logprob/engine_gap_max": float(diff.max()),
        **mismatch_metrics(logp, engine, mask),
    }, proxy_rows


def _chunk(cfg) -> int | None:
    """Positions per vocabulary block of the log-probs (bounded memory) with `micro_batch_tokens`; None = full."""
    return cfg.logprob_chunk_tokens if cfg.micro_batch_tokens else None


def _frozen_logprobs(cfg: TrainConfig, policy: Policy, model, batch) -> torch.Tensor:
    """No-grad token log-probs (N, T) of pi_old / the reference, in the compute dtype (bounded when micro-batching)."""
    with compute_context(policy.compute_dtype, policy.device):
        if cfg.micro_batch_tokens:
            return chunked_sequence_logprobs(
                model, batch, cfg.temperature, cfg.micro_batch_tokens, cfg.logprob_chunk_tokens
            )[0]
        return sequence_logprobs(model, batch, cfg.temperature)


def update(
    cfg: TrainConfig,
    policy: Policy,
    loss: Objective,
    step: int,
    batch,
    token_adv: torch.Tensor,
    nondegenerate: torch.Tensor,
    engine_lp,
    times: PhaseTimer,
) -> dict[str, float]:
    """epochs x mini-batches of clipped policy-gradient steps on the rollout batch; returns update metrics.
    Mini-batches are capped at the rows (a dynamic-sampling batch may hold fewer), so none is empty. With a rollout
    correction, the token advantages are weighted by `correction_weights(pi_old, engine)` first."""
    n = batch.tokens.shape[0]
    splits = min(cfg.mini_batches, n)
    active = (
        loss.active_rows(token_adv, batch.mask)
        if cfg.skip_zero_advantage
        else torch.ones(n, dtype=torch.bool, device=token_adv.device)
    )  # (N,)
    old = ref = None
    out: dict[str, float] = {}
    with times("logprobs"):
        if cfg.epochs * splits > 1 or loss.correction.mode != "none":  # off-policy or corrected: freeze pi_old first
            old = torch.zeros_like(batch.mask)
            old[active] = _frozen_logprobs(cfg, policy, policy.model, batch.rows(active.nonzero().squeeze(1)))
        if policy.ref is not None:
            ref = _frozen_logprobs(cfg, policy, policy.ref, batch)
    mask = batch.mask  # (N, T) the aggregation mask: a rejection mode takes its rejected tokens out (as veRL 0.9.1)
    if loss.correction.mode != "none":  # the weights change the measure (detached), on the trained rows
        fix = correction(old, engine_lp, batch.mask * active[:, None], loss.correction)
        token_adv, mask = token_adv * fix.weights, batch.mask * fix.keep  # (N, T) each
        out.update({k: float(v) for k, v in fix.metrics.items() if not k.startswith("rollout_corr/kl")})  # kl: measure
    old = old if cfg.epochs * splits > 1 else None  # one step per batch: ratio exactly 1 (the loss detaches logp)
    sums: dict[str, float] = {}
    generator = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step)
    with times("update"):
        before = param_snapshot(policy.model, policy.param_stride)
        for _ in range(cfg.epochs):
            order = torch.randperm(n, generator=generator) if splits > 1 else torch.arange(n)
            for mb in torch.tensor_split(order.to(token_adv.device), splits):
                args = (batch, mask, mb, active[mb], token_adv, nondegenerate, old, ref)
                metrics = _minibatch_step(cfg, policy, loss, *args)
                for key, value in metrics.items():
                    sums[key] = sums.get(key, 0.0) + value
        policy.scheduler.step()
        out["update/param_change"] = float(param_change(policy.model, before, policy.param_stride))
    out.update({k: v / (cfg.epochs * splits) for k, v in sums.items()})
    out["update/optimizer_steps"] = float(cfg.epochs * splits)
    out["update/rows_trained"] = float(active.sum())
    out["update/rows_skipped"] = float(n - active.sum())
    return out


def _minibatch_step(
    cfg: TrainConfig, policy: Policy, loss: Objective, batch, mask, mb, mb_active, token_adv, nondegenerate, old, ref
) -> dict[str, float]:
    """One optimizer step on mini-batch `mb` (row indices): its active rows are forwarded in pieces (`batch.pieces`:
    length buckets, or token-budget micro-batches), each trimmed of its padding columns, the forward and loss in
    the compute dtype; the pieces' losses (sums over rows) accumulate one gradient. `mask` (N, T): the tokens the
    loss aggregates (`batch.mask` less a rejection's tokens). Returns the step's loss metrics and
    `policy/grad_norm`."""
    weights = aggregation_weights(mask[mb], loss.agg, nondegenerate[mb], loss.max_tokens)[mb_active]  # ALL rows
    rows = mb[mb_active]
    # zero (not None) grads: an all-skipped mini-batch steps AdamW on zeros (momentum moves the weights); a resumed
    # run gets the same zero grads from checkpoint.load_optimizer
    policy.optimizer.zero_grad(set_to_none=False)
    parts = []
    for piece, sub in pieces(batch.rows(rows), cfg.micro_batch_tokens):  # none when every row is skipped
        idx, t = rows[piece], sub.tokens.shape[1]
        with compute_context(policy.compute_dtype, policy.device):
            logp = forward_stats(policy.model, sub, cfg.temperature, chunk=_chunk(cfg)).logprobs  # (b, t)
            value, m = loss.policy_loss(  # the one loss registry call (benchctl.losses)
                logp,
                logp.detach() if old is None else old[idx, :t],
                token_adv[idx, :t],
                mask[idx, :t],
                weights[piece, :t],
                kl_coef=loss.kl_coef,
                ref_log_prob=None if ref is None else ref[idx, :t],
            )
        value.backward()
        parts.append((m, float(mask[idx, :t].sum())))
    metrics = M.combine_metrics(parts)
    max_norm = cfg.max_grad_norm if cfg.max_grad_norm > 0 else float("inf")
    metrics["policy/grad_norm"] = float(torch.nn.utils.clip_grad_norm_(policy.model.parameters(), max_norm))
    policy.optimizer.step()
    return metrics


def _budget_spent(cfg: TrainConfig, state: TrainState) -> bool:
    return cfg.token_budget is not None and state.tokens_total >= cfg.token_budget
