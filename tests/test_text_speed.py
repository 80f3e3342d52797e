"""The exact savings of a text-md step (docs/REAL_DATA.md, "Where a text-md step goes"): the
text model computes on the real tokens only (and its last block on each [CLS] alone), masks keys
inside the score product, evaluates shortest-first without autograd, and trains on a vocabulary
compacted to the training ids. Each must leave the numbers as they were: exactly where the
operations are the same, else to the rounding of reordered sums (float64: 1e-12 relative;
float32: 1e-6, the brief's bound, several times what reordering a 256-term dot product costs).
"""

import math

import pytest
import torch
import torch.nn.functional as F

from attnbias.experiments.text_md import compact_vocabulary
from attnbias.real.train import TensorData, evaluate, make_optimizer
from attnbias.real.transformer import Packing, TextTransformer, attend

pytestmark = [pytest.mark.real, pytest.mark.usefixtures("one_thread")]

SHAPES = [  # the default text-md block (post-norm, no biases, dropout) and the pre-norm one
    dict(post_norm=True, bias=False, dropout=0.2),
    dict(post_norm=False, bias=True, dropout=0.1),
]
TOLERANCE = {torch.float64: 1e-12, torch.float32: 1e-6}


def snippets(n=24, T=20, vocab=50, seed=0, cls_padded=False):
    """Token ids ([CLS] = 1 first) of lengths 2…T, padded with 0, and random labels."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(2, T + 1, (n,), generator=g)
    lengths[0] = T
    mask = (torch.arange(T)[None, :] < lengths[:, None]).long()
    ids = torch.randint(2, vocab, (n, T), generator=g) * mask
    ids[:, 0] = 1
    if cls_padded:  # a position 0 that is padding: the padded model still reads it
        mask[1, 0] = 0
    return ids, mask, torch.randint(0, 2, (n,), generator=g)


def model(dtype, vocab=50, seed=0, layers=2, **shape):
    torch.manual_seed(seed)
    shape = {**SHAPES[0], **shape}
    net = TextTransformer(vocab, 2, dim=32, heads=2, layers=layers, max_len=24, init="pytorch",
                          **shape)  # fmt: skip
    return net.to(dtype)


def relative(a, b) -> float:
    a, b = a.detach(), b.detach()
    return float((a - b).abs().max() / b.abs().max())


def padded_logits(net, ids, mask):
    """The padded layout's logits (every position computed: the model as it was)."""
    return net(ids, mask, output_attentions=True).logits


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layers", [1, 2])
def test_the_packed_model_gives_the_padded_models_logits_and_gradients(dtype, shape, layers):
    net = model(dtype, layers=layers, **shape).eval()
    ids, mask, labels = snippets(cls_padded=True)
    packed = net(ids, mask).logits
    padded = padded_logits(net, ids, mask)
    assert relative(packed, padded) < TOLERANCE[dtype]

    def gradients(logits):
        return torch.autograd.grad(F.cross_entropy(logits, labels), list(net.parameters()))

    # relative to the largest entry of all: the keys' bias has a zero gradient in exact
    # arithmetic (softmax ignores a shift shared by all keys), rounding noise in both layouts
    g_packed, g_padded = gradients(net(ids, mask).logits), gradients(padded_logits(net, ids, mask))
    scale = max(float(g.abs().max()) for g in g_padded)
    assert max(float((a - b).abs().max()) for a, b in zip(g_packed, g_padded)) < (
        TOLERANCE[dtype] * scale
    )


@pytest.mark.parametrize("shape", SHAPES)
def test_training_mode_draws_the_padded_models_dropout_masks(shape):
    """Same generator state in, same masks: the logits agree, and the generator is left where
    the padded model leaves it (so every later draw of a run is the same too)."""
    net = model(torch.float64, **shape).train()
    ids, mask, _ = snippets()
    torch.manual_seed(7)
    packed = net(ids, mask).logits
    after_packed = torch.get_rng_state()
    torch.manual_seed(7)
    padded = padded_logits(net, ids, mask)
    assert torch.equal(after_packed, torch.get_rng_state())
    assert relative(packed, padded) < TOLERANCE[torch.float64]
    torch.manual_seed(8)  # another mask gives other logits: the comparison can fail
    assert relative(net(ids, mask).logits, padded) > 1e-3


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("p", [0.1, 0.2, 1 / 3, 0.5, 0.9, 1.0])
def test_packed_dropout_is_f_dropout_of_the_padded_tensor_read_at_the_rows(dtype, p):
    """Bit for bit, and the generator ends where F.dropout leaves it; on the CPU the mask is
    drawn from torch.rand's doubles, which must stay bernoulli_'s draws."""
    pad_mask = snippets(n=16, T=9)[1] == 0
    packing = Packing.of(pad_mask, (16, 9), "cpu")
    full = torch.randn(16 * 9, 5, dtype=dtype)
    drop = torch.nn.Dropout(p).train()
    for rows in (packing.rows, packing.rows[packing.cls], torch.arange(16 * 9)):
        torch.manual_seed(11)
        packed = packing.dropout(drop, full[rows], rows)
        state = torch.get_rng_state()
        torch.manual_seed(11)
        assert torch.equal(packed, F.dropout(full, p, training=True)[rows])
        assert torch.equal(state, torch.get_rng_state())
    assert torch.equal(packing.dropout(drop.eval(), full[rows], rows), full[rows])


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")
def test_on_cuda_the_packed_model_draws_the_padded_models_masks():
    net = model(torch.float32).cuda().train()
    ids, mask, _ = (t.cuda() for t in snippets())
    torch.manual_seed(7)
    packed = net(ids, mask).logits
    torch.manual_seed(7)
    assert relative(packed, padded_logits(net, ids, mask)) < TOLERANCE[torch.float32]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_padding_to_the_batchs_longest_or_to_max_len_gives_the_same_logits(dtype):
    net = model(dtype).eval()
    ids, mask, _ = snippets(T=12)
    wider = F.pad(ids, (0, 12)), F.pad(mask, (0, 12))  # 12 more columns of padding
    assert relative(net(*wider).logits, net(ids, mask).logits) < TOLERANCE[dtype]
    assert relative(padded_logits(net, *wider), net(ids, mask).logits) < TOLERANCE[dtype]


def test_the_packing_keeps_the_real_tokens_and_each_cls():
    pad_mask = torch.tensor([[False, False, True], [True, False, True]])
    packing = Packing.of(pad_mask, (2, 3), "cpu")
    assert packing.rows.tolist() == [0, 1, 3, 4]  # row 1's position 0 is padding: kept
    assert packing.rows[packing.cls].tolist() == [0, 3]
    x = torch.arange(8.0).view(4, 2)
    assert torch.equal(packing.packed(packing.padded(x)), x)
    assert Packing.of(torch.zeros(2, 3, dtype=torch.bool), (2, 3), "cpu").dense


@pytest.mark.parametrize("head_dim", [16, 4, 128])
def test_scaled_masked_scores_in_one_product_match_divide_then_mask(head_dim):
    """baddbmm with the 1/√d scale and a −inf key bias against the textbook order (divide by
    √d, mask to −inf, softmax, mix): bit for bit when √d is a power of two."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(3, 2, 7, head_dim, dtype=torch.float32) for _ in range(3))
    pad_mask = torch.zeros(3, 7, dtype=torch.bool)
    pad_mask[1, 4:] = True
    scores = (q @ k.transpose(-1, -2) / math.sqrt(head_dim)).masked_fill(
        pad_mask[:, None, None, :], float("-inf")
    )
    expected = scores.softmax(-1) @ v
    bias = torch.zeros(3, 7, dtype=q.dtype).masked_fill(pad_mask, float("-inf"))[:, None, None, :]
    mixed, _ = attend(q, k, v, bias)
    if math.sqrt(head_dim).is_integer() and math.log2(math.sqrt(head_dim)).is_integer():
        assert torch.equal(mixed, expected)
    else:
        assert relative(mixed, expected) < TOLERANCE[torch.float32]


def test_evaluation_does_not_depend_on_order_or_batch_size():
    net = model(torch.float64)
    ids, mask, labels = snippets(n=40)
    data = TensorData({"input_ids": ids, "attention_mask": mask}, labels)
    shuffled = torch.randperm(40, generator=torch.Generator().manual_seed(1))
    other = TensorData({"input_ids": ids[shuffled], "attention_mask": mask[shuffled]},
                       labels[shuffled])  # fmt: skip
    with torch.no_grad():  # one example at a time, cut to its own length, in eval mode
        one_by_one = [net.eval()(ids[i : i + 1, : int(mask[i].sum())]).logits for i in range(40)]
    net.train()
    logits = torch.cat(one_by_one)
    expected = {
        "loss": float(F.cross_entropy(logits, labels)),
        "accuracy": float((logits.argmax(-1) == labels).double().mean()),
    }
    for scores in (evaluate(net, data, 7), evaluate(net, other, 256), evaluate(net, data, 1)):
        assert scores["accuracy"] == expected["accuracy"]
        assert scores["loss"] == pytest.approx(expected["loss"], rel=1e-12)
    assert net.training  # evaluate restores the mode


def test_a_compacted_vocabulary_trains_exactly_as_the_full_one():
    """The embedding rows of tokens no training snippet uses are never read, and a mirror step
    leaves rows with a zero gradient alone: the compacted model (the rows in use, renumbered;
    the same other weights) gives the full model's logits bit for bit, before and after plain
    ℓ1.1-MD steps with dropout."""
    vocab, unk = 400, 3
    ids, mask, labels = snippets(n=32, T=10, vocab=60)  # uses ids < 60 of 400
    table = compact_vocabulary(ids, vocab, unk)
    full = model(torch.float32, vocab=vocab).train()
    compact = model(torch.float32, vocab=int(table.max()) + 1).train()
    seen = torch.unique(torch.cat([ids.flatten(), torch.tensor([unk])]))  # the ids in use
    assert torch.equal(table[seen], torch.arange(len(seen)))  # compacted id i is seen[i]
    state = full.state_dict()
    compact.load_state_dict({**state, "tokens.weight": state["tokens.weight"][seen]})
    runs = []
    for net, inputs in ((full, ids), (compact, table[ids])):
        optimizer = make_optimizer(net.parameters(), {"name": "md", "p": 1.1, "lr": 0.05})
        torch.manual_seed(3)
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(net(inputs, mask).logits, labels).backward()
            optimizer.step()
        runs.append(net.eval()(inputs, mask).logits)
    assert torch.equal(runs[0], runs[1])
