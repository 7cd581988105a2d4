"""Loop-form reference implementations: one group (and one rollout) at a time, written from the spec formulas.

Independent of the vectorised code: only the parameter dataclasses are shared.  Every registered estimator
needs an entry in REFERENCES, or `test_matches_reference` fails for it.
Base refs: (rewards, params, state) -> (adv, state); modifier refs: (rewards, base_adv, params, state) -> ...
"""

from __future__ import annotations

import math

import numpy as np

DELTA = 1e-6


def mean(xs):
    return sum(xs) / len(xs)


def pstd(xs):
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def std_of(xs, kind):
    if kind == "sample" and len(xs) > 1:
        m = mean(xs)
        return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
    return pstd(xs)


def sign(x):
    return int(x > 0) - int(x < 0)


def rows(r):
    return [list(map(float, row)) for row in r]


def ref_grpo(r, params, state):
    out = np.zeros(r.shape)
    for q, row in enumerate(rows(r)):
        if pstd(row) >= DELTA:
            for i, x in enumerate(row):
                out[q, i] = (x - mean(row)) / (std_of(row, params.std) + params.eps)
    return out, None


def ref_dr_grpo(r, params, state):
    out = np.zeros(r.shape)
    for q, row in enumerate(rows(r)):
        if pstd(row) >= DELTA:
            for i, x in enumerate(row):
                out[q, i] = x - mean(row)
    return out, None


def ref_rloo(r, params, state):
    out = np.zeros(r.shape)
    for q, row in enumerate(rows(r)):
        for i, x in enumerate(row):
            others = row[:i] + row[i + 1 :]
            if not others:
                out[q, i] = x
            elif pstd(row) >= DELTA:
                out[q, i] = x - mean(others)
    return out, None


def ref_dgpo(r, params, state):
    groups = rows(r)
    live = [q for q, row in enumerate(groups) if pstd(row) >= DELTA]
    weights = {q: 1.0 for q in range(len(groups))}
    if params.question_weighting and live:
        expo = {q: math.exp(-mean(groups[q]) / params.temperature) for q in live}
        for q in live:
            weights[q] = len(live) * expo[q] / sum(expo.values())
    out = np.zeros(r.shape)
    for q in live:
        row, m = groups[q], mean(groups[q])
        mad = sum(abs(x - m) for x in row)
        for i, x in enumerate(row):
            out[q, i] = len(row) * (x - m) / (mad + params.eps_mad) * weights[q]
    return out, None


def ref_ngrpo(r, params, state):
    out = np.zeros(r.shape)
    for q, row in enumerate(rows(r)):
        values = row + [params.virtual_reward] * params.n_virtual
        if pstd(values) >= DELTA:
            for i, x in enumerate(row):
                out[q, i] = (x - mean(values)) / (std_of(values, "sample") + params.eps)
    return out, None


def ref_w_reinforce(r, params, state):
    out = np.zeros(r.shape)
    for q, row in enumerate(rows(r)):
        for i, x in enumerate(row):
            out[q, i] = params.lam * x - (1 - x)
    return out, None


def ref_passk(r, params, state):
    out = np.zeros(r.shape)
    for q, row in enumerate(rows(r)):
        n, c, k = len(row), int(sum(row)), params.k
        if c in (0, n):
            continue
        rho = 1 - math.comb(n - c, k) / math.comb(n, k)
        sigma = math.sqrt(rho * (1 - rho))
        for i, x in enumerate(row):
            if x == 1:
                out[q, i] = (1 - rho) / (sigma + params.eps)
            else:
                out[q, i] = (1 - rho - math.comb(n - c - 1, k - 1) / math.comb(n - 1, k - 1)) / (sigma + params.eps)
    return out, None


def ref_avspo(r, params, state):
    tau, prev = (params.tau0, None) if state is None else state
    groups = rows(r)
    collapsed = [pstd(row) < params.delta for row in groups]
    acr = sum(collapsed) / len(groups)
    out = np.zeros(r.shape)
    for q, row in enumerate(groups):
        values = list(row)
        if collapsed[q]:
            if not acr > tau:
                continue
            g = len(row)
            k_virtual = max(1, min(g, math.ceil(g * acr**params.gamma - 1e-9)))
            r_max = max(row)
            for k in range(1, k_virtual + 1):
                if params.virtual == "www":
                    values.append(r_max if k == 1 else r_max * (1 - (k - 1) / k_virtual))
                else:
                    values.append(max(params.anchor_reward, r_max * (1 - k / (k_virtual + 1))))
            if pstd(values) < params.delta:
                continue
        for i, x in enumerate(row):
            out[q, i] = (x - mean(values)) / (std_of(values, params.std) + params.eps)
    batch_mean = float(np.mean(r))
    if prev is not None:
        tau = min(max(tau + params.eta * sign(batch_mean - prev) * (acr - tau), params.tau_min), params.tau_max)
    return out, (tau, batch_mean)


def ref_ha_dw(r, base_adv, params, state):
    anchor, anchors, accs = (None, [], []) if state is None else state
    y = float(np.mean(r))
    if params.anchor == "fixed":
        prior = params.c0
    elif anchor is not None:
        prior = anchor
    else:
        prior = params.c0 if params.c0 is not None else y
    out = np.array(base_adv, dtype=float)
    for q, row in enumerate(rows(r)):
        if pstd(row) < DELTA:
            continue
        diff = mean(row) - prior
        for i in range(len(row)):
            d = -sign(base_adv[q, i]) * sign(diff)
            out[q, i] = base_adv[q, i] * params.lambda_scale * math.exp(d * abs(diff))
    accs = (accs + [y])[-params.h :]
    sigma = float(np.std(anchors)) if len(anchors) >= 2 else 1.0
    eta_t = min(max(params.eta * (sigma if params.gain == "anchor_std" else 1.0), 0.0), 1.0)
    if params.anchor == "fixed":
        post = prior
    elif params.update == "hard":
        post = mean(accs)
    else:
        post = (1 - eta_t) * prior + eta_t * y
    return out, (post, (anchors + [post])[-params.m :], accs)


def _per_group(r, base_adv, transform):
    """Apply transform(A, p) to every rollout of every non-degenerate group."""
    out = np.array(base_adv, dtype=float)
    for q, row in enumerate(rows(r)):
        if pstd(row) >= DELTA:
            for i in range(len(row)):
                out[q, i] = transform(float(base_adv[q, i]), mean(row))
    return out


def ref_a_grae(r, base_adv, params, state):
    omega = float(np.mean(r))

    def transform(a, p):
        if params.shift:
            a = omega / 2 * a / math.sqrt(p) + (1 - omega) / 2 * a / math.sqrt(1 - p)
        if params.suppress and a > 0:
            a = a * min(1.0, omega / params.alpha)
        return a

    return _per_group(r, base_adv, transform), None


def ref_pos_dominant(r, base_adv, params, state):
    return _per_group(r, base_adv, lambda a, p: params.beta * a if a > 0 else a), None


def ref_neg_dominant(r, base_adv, params, state):
    return _per_group(r, base_adv, lambda a, p: a / params.beta if a > 0 else a), None


def ref_hard_focused(r, base_adv, params, state):
    return _per_group(r, base_adv, lambda a, p: params.gamma * a / math.sqrt(p)), None


def ref_easy_focused(r, base_adv, params, state):
    return _per_group(r, base_adv, lambda a, p: params.gamma * a / math.sqrt(1 - p)), None


def ref_grpo_lead(r, base_adv, params, state):
    def w(x):
        return params.a + (params.b - params.a) / (1 + math.exp(params.k * (x - params.x0)))

    return _per_group(r, base_adv, lambda a, p: a * w(p) if a > 0 else a * w(1 - p)), None


def ref_oar(r, base_adv, params, state):
    return np.array(base_adv, dtype=float), None


def ref_token_weights(scores, length, q, beta, floor):
    """contract.md §7 for one response: weights of its first `length` (reasoning) tokens."""
    u = [math.log(1 + s) for s in scores[:length]]
    lo, hi = min(u), max(u)
    u_hat = [1.0] * length if hi == lo else [(x - lo) / (hi - lo) for x in u]
    tau = float(np.quantile(u_hat, q))
    w = [max(x / (tau + 1e-8), floor) if x < tau else 1 + beta * (x - tau) / (1 - tau + 1e-8) for x in u_hat]
    return [x * length / sum(w) for x in w]


def ref_maxrl(r, params, state):
    out = np.zeros(r.shape)
    for q, row in enumerate(rows(r)):
        if pstd(row) >= DELTA and mean(row) > params.eps:
            for i, x in enumerate(row):
                out[q, i] = (x - mean(row)) / (mean(row) + params.eps)
    return out, None


def _centred_rows(r):
    """r - group mean per rollout (0 in degenerate groups), baseline 0 for a group of one (veRL)."""
    out = []
    for row in rows(r):
        if len(row) == 1:
            out.append(list(row))
        else:
            out.append([x - mean(row) if pstd(row) >= DELTA else 0.0 for x in row])
    return out


def ref_reinforce_pp_baseline(r, params, state):
    flat = [x for row in _centred_rows(r) for x in row]
    if len(flat) < 2:
        return np.zeros(r.shape), None
    m = mean(flat) if r.shape[1] == 1 else 0.0
    var = sum((x - m) ** 2 for x in flat) / (len(flat) - 1)
    return np.array([[(x - m) / math.sqrt(var + params.eps) for x in row] for row in _centred_rows(r)]), None


def ref_batch_std(r, params, state):
    flat = [x for row in rows(r) for x in row]
    sd = std_of(flat, params.std)
    return np.array([[x / (sd + params.eps) if sd > 0 else 0.0 for x in row] for row in _centred_rows(r)]), None


def ref_gpg(r, params, state):
    b, centred = r.size, _centred_rows(r)
    if params.alpha == "nonzero":
        count = sum(x != 0 for row in rows(r) for x in row)
    elif params.alpha == "valid":
        count = sum(len(row) for row in centred if any(x != 0 for x in row))
    else:
        count = b
    alpha = b / max(count, 1)
    return np.array([[alpha * x / params.f_norm for x in row] for row in centred]), None


def ref_mean_baseline(r, params, state):
    return np.array(_centred_rows(r)), None


def ref_krpo(r, params, state):
    out = np.zeros(r.shape)
    for q, row in enumerate(rows(r)):
        x, var = params.init_mean, params.init_var
        for i, z in enumerate(row):
            prior = var + params.process_var
            gain = prior / (prior + params.meas_var)
            x = x + gain * (z - x)
            var = (1 - gain) * prior
            out[q, i] = (z - x) / (math.sqrt(var) + params.eps)
    return out, None


def ref_bnpo(r, params, state):
    ps = [mean(row) for row in rows(r)]
    alpha = beta = 1.0
    if len(ps) > 1 and std_of(ps, "sample") > 0:
        m, v = mean(ps), std_of(ps, "sample") ** 2
        a, b = (m * (1 - m) / v - 1) * m, (m * (1 - m) / v - 1) * (1 - m)
        alpha, beta = max(1 + a / 3, 1.0), max(1 + b / 3, 1.0)
    out = np.zeros(r.shape)
    for q, row in enumerate(rows(r)):
        if pstd(row) < DELTA:
            continue
        p = ps[q]
        density = (
            p ** (alpha - 1) * (1 - p) ** (beta - 1) * math.gamma(alpha + beta) / math.gamma(alpha) / math.gamma(beta)
        )
        weight = min(1 / density, params.max_weight) if density > 0 else params.max_weight
        for i, x in enumerate(row):
            out[q, i] = weight * (x - p)
    return out, None


def ref_jspo(r, params, state):
    """JS baseline (arXiv:2511.03710 code): per prompt, lambda and batch mean from the other prompts (or all)."""
    groups = rows(r)
    n, g = len(groups), len(groups[0])
    means = [mean(row) for row in groups]
    vs = [sum((x - mean(row)) ** 2 for x in row) / (g - 1) / g for row in groups]
    out = np.zeros(r.shape)
    for q, row in enumerate(groups):
        pool = [k for k in range(n) if k != q] if params.leave_one_out and n > 1 else list(range(n))
        bm = mean([means[k] for k in pool])
        v2, s2 = mean([vs[k] for k in pool]), mean([(means[k] - bm) ** 2 for k in pool])
        lam = v2 / (v2 + s2 + params.eps)
        for i, x in enumerate(row):
            loo = (sum(row) - x) / (g - 1)
            out[q, i] = x - ((1 - lam) * loo + lam * bm)
    return out, None


def ref_dbb(r, params, state):
    """Discounted Beta-Bernoulli posterior per prompt (row q = prompt q without ids), Eq. 11-13."""
    post = dict(state or {})
    out = np.zeros(r.shape)
    for q, row in enumerate(rows(r)):
        a, b = post.get(str(q), (params.alpha0, params.beta0))
        a, b = params.discount * a + sum(row), params.discount * b + len(row) - sum(row)
        post[str(q)] = (a, b)
        p, sd = a / (a + b), math.sqrt(a * b / (a + b) ** 2)
        for i, x in enumerate(row):
            out[q, i] = (x - p) / (sd + params.eps) if params.normalise else x - p
    return out, post


def ref_codapo(r, base_adv, params, state):
    """CoDaPO weight without log-probs (confidence 1): 4 acc (1 - acc) + offset, acc = share of rewards == 1."""
    out = np.array(base_adv, dtype=float)
    for q, row in enumerate(rows(r)):
        acc = sum(1.0 for x in row if x == 1.0) / len(row)
        d = 1 - acc
        out[q] = base_adv[q] * (1 - 4 * (d - 0.5) ** 2 + params.weight_offset)
    return out, None


def ref_f_grpo(r, base_adv, params, state):
    return _per_group(r, base_adv, lambda a, p: a * (1 - p) ** params.gamma), None


def ref_rl_zvp(r, base_adv, params, state):
    out = np.array(base_adv, dtype=float)
    for q, row in enumerate(rows(r)):
        if pstd(row) < DELTA and mean(row) != 0.5:  # zero-variance: +alpha all-correct, -alpha all-wrong
            out[q, :] = params.alpha * (1.0 if mean(row) > 0.5 else -1.0)
    return out, None


REFERENCES = {
    "grpo": ref_grpo,
    "dr_grpo": ref_dr_grpo,
    "rloo": ref_rloo,
    "dgpo": ref_dgpo,
    "ngrpo": ref_ngrpo,
    "w_reinforce": ref_w_reinforce,
    "passk": ref_passk,
    "avspo": ref_avspo,
    "ha_dw": ref_ha_dw,
    "a_grae": ref_a_grae,
    "pos_dominant": ref_pos_dominant,
    "neg_dominant": ref_neg_dominant,
    "hard_focused": ref_hard_focused,
    "easy_focused": ref_easy_focused,
    "grpo_lead": ref_grpo_lead,
    "oar_g": ref_oar,
    "oar_p": ref_oar,
    "maxrl": ref_maxrl,
    "reinforce_pp_baseline": ref_reinforce_pp_baseline,
    "batch_std": ref_batch_std,
    "gpg": ref_gpg,
    "opo": ref_mean_baseline,
    "optimal_token_baseline": ref_mean_baseline,
    "krpo": ref_krpo,
    "bnpo": ref_bnpo,
    "jspo": ref_jspo,
    "dbb": ref_dbb,
    "codapo": ref_codapo,
    "f_grpo": ref_f_grpo,
    "rl_zvp": ref_rl_zvp,
}


def run_reference(est, rewards, states):
    """Reference advantages of an Estimator (recursing into its base); `states` maps id(est) -> ref state."""
    ref = REFERENCES[est.name]
    if est.base is None:
        adv, states[id(est)] = ref(rewards, est.params, states.get(id(est)))
    else:
        base_adv = run_reference(est.base, rewards, states)
        adv, states[id(est)] = ref(rewards, base_adv, est.params, states.get(id(est)))
    return adv
