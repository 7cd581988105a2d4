"""The policy's one forward path (`policy.completion_forward`): the decoder once, the LM head on the completion
positions as the model's own forward applies it, so the trainer's logits are `model(...)`'s bit for bit."""

import pytest
import torch

from benchctl.trainers.batch import pack
from benchctl.trainers.device import deterministic
from benchctl.trainers.policy import completion_hidden, completion_logits, lm_head_weight


def _batch():
    prompts = [[5, 6, 7], [8, 9], [10, 11, 12, 13]]
    completions = [[14, 15], [16, 17, 18, 19], [20]]
    return pack(prompts, completions, pad_id=0)


def _grads(model):
    return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])


def test_completion_logits_are_the_models_own_forward_bit_for_bit(tiny_model):
    from benchctl.trainers.weights import load_policy

    model = load_policy(str(tiny_model), "cpu")
    batch, t = _batch(), 4
    results = []
    for path in ("model", "ours"):
        model.zero_grad(set_to_none=True)
        with deterministic(True):
            if path == "model":
                out = model(
                    input_ids=batch.input_ids,
                    attention_mask=batch.attention_mask,
                    position_ids=batch.position_ids,
                    logits_to_keep=t + 1,
                    use_cache=False,
                )
                logits = out.logits[:, :-1, :].float() / 0.7
            else:
                logits = completion_logits(model, batch, 0.7, share_prompts=False)
            (logits * torch.linspace(-1, 1, logits.numel()).reshape(logits.shape)).sum().backward()
        results.append((logits.detach(), _grads(model)))
    assert torch.equal(results[0][0], results[1][0])
    assert torch.equal(results[0][1], results[1][1])


@pytest.mark.parametrize("share_prompts", [False, True])
def test_hidden_states_times_the_head_are_the_logits(tiny_model, share_prompts):
    from benchctl.trainers.weights import load_policy

    model = load_policy(str(tiny_model), "cpu").double()
    batch = pack([[5, 6, 7]] * 3 + [[8, 9]] * 3, [[14, 15], [16], [17, 18, 19], [20], [21, 22], [23]], pad_id=0)
    with torch.no_grad():
        logits = completion_logits(model, batch, 0.7, share_prompts=share_prompts)
        hidden = completion_hidden(model, batch, share_prompts=share_prompts)
    torch.testing.assert_close((hidden @ lm_head_weight(model).t()).float() / 0.7, logits, rtol=1e-6, atol=1e-6)
