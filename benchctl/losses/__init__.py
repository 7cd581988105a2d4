"""Policy losses: a registry beside the estimators', one pure torch function per loss.

    from benchctl.losses import get_loss, parse_loss, list_losses, register_loss
    loss = parse_loss("ppo_clip(clip_high=0.28, c=3)")
    value, metrics = loss(log_prob, old_log_prob, advantages, response_mask, "token-mean")
    loss.fn, loss.params, loss.label, loss.loss_agg

Each family lives in its own module and registers its pure functions with `@register_loss`.
"""

# Registration order = listing order.
from benchctl.losses import clip, sequence, trust, cov  # noqa: F401, I001
from benchctl.losses import asymmetric  # noqa: F401, I001
from benchctl.losses.api import Loss, LossInfo, get_loss, list_losses, loss_info, parse_loss
from benchctl.losses.registry import register_loss, registered_names, unregister_loss

__all__ = [
    "Loss",
    "LossInfo",
    "get_loss",
    "list_losses",
    "loss_info",
    "parse_loss",
    "register_loss",
    "registered_names",
    "unregister_loss",
]
