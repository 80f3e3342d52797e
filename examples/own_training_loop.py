"""The attnbias optimisers in an ordinary PyTorch training loop (docs/OPTIMIZERS.md).

A tiny attention classifier (a learned query attends over 8 tokens; a 2-layer MLP head reads the
attended token) learns which token carries the label. It is trained with ℓp mirror descent:
the attention weights in the ℓ1.5 geometry, the head as normalized gradient descent (p = 2),
two parameter groups of one optimiser; a cosine learning-rate schedule; a checkpoint half-way,
saved with torch.save and loaded with torch.load(weights_only=True), from which a second run
resumes and ends exactly where the uninterrupted one does.

    python examples/own_training_loop.py              # float32, about a second on a CPU
    python examples/own_training_loop.py --bf16       # forward pass under bfloat16 autocast
    python examples/own_training_loop.py --device cuda

It runs on one CPU thread unless --threads says otherwise: a model this small spends more on
handing work between threads than it saves (50 s against 5 s on a busy two-core machine).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import torch
from torch import nn

from attnbias.optim import MirrorDescent

N, T, D = 512, 8, 16  # sequences, tokens per sequence, token dimension
STEPS, BATCH = 300, 64


def make_data(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Gaussian tokens; in each sequence one random token carries the label, ±1 along u."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(N, T, D, generator=g) / math.sqrt(D)
    y = torch.randint(0, 2, (N,), generator=g) * 2.0 - 1.0
    u = torch.zeros(D)
    u[0] = 1.0
    signal = torch.randint(0, T, (N,), generator=g)
    x[torch.arange(N), signal] += 0.5 * y[:, None] * u
    x[torch.arange(N), signal, 1] += 1.0  # what lets attention find the signal token
    return x, y


class TinyAttention(nn.Module):
    """One softmax attention pooling with a learned query, then a 2-layer MLP head."""

    def __init__(self, d: int, hidden: int = 32):
        super().__init__()
        self.key = nn.Linear(d, d, bias=False)
        self.query = nn.Parameter(torch.randn(d) / math.sqrt(d))
        self.head = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = self.key(x) @ self.query  # (n, T)
        pooled = (scores.softmax(dim=-1).unsqueeze(-1) * x).sum(dim=1)  # (n, d)
        return self.head(pooled).squeeze(-1)


def build(device: str):
    """Model, optimiser and schedule, the same every time (seeded)."""
    torch.manual_seed(0)
    model = TinyAttention(D).to(device)
    optimizer = MirrorDescent(
        [
            # attention: ℓ1.5 mirror descent, normalized by the gradient's dual (ℓ3) norm
            {"params": [model.key.weight, model.query], "p": 1.5},
            # head: p = 2 is normalized gradient descent; its own, smaller step size, and
            # decoupled weight decay (w ← (1 − lr·λ)w before each step, as AdamW)
            {"params": model.head.parameters(), "p": 2.0, "lr": 0.02, "weight_decay": 1e-3},
        ],
        lr=0.05,
        normalize="per_tensor",  # each tensor by its own norm (True: by its group's together)
    )
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=STEPS)
    return model, optimizer, schedule


def batch(step: int, device: str) -> torch.Tensor:
    """The indices of step `step`'s minibatch: a fixed shuffle per epoch, so a resumed run
    sees the same batches as an uninterrupted one."""
    epoch, k = divmod(step * BATCH, N)
    order = torch.randperm(N, generator=torch.Generator().manual_seed(epoch))
    return order[k : k + BATCH].to(device)


def train(model, optimizer, schedule, data, steps: range, bf16: bool, log=print) -> float:
    x, y = data
    device = x.device.type
    for step in steps:
        i = batch(step, device)
        # autocast runs the forward in bfloat16; parameters and gradients stay float32
        with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
            logits = model(x[i])
        loss = nn.functional.softplus(-y[i] * logits.float()).mean()  # logistic loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        if step % 50 == 0 or step == STEPS - 1:
            log(f"step {step:3d}  loss {loss.item():.4f}  lr {schedule.get_last_lr()[0]:.4f}")
    with torch.no_grad(), torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
        return nn.functional.softplus(-y * model(x).float()).mean().item()


def accuracy(model, data) -> float:
    x, y = data
    with torch.no_grad():
        return (torch.sign(model(x).float()) == y).float().mean().item()


def usable(device: str) -> str | None:
    """Why torch cannot use `device` here (a CPU build asked for cuda, a name torch does not
    know), in one line; None if it can."""
    try:
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError) as err:  # a CPU build asserts "not compiled with CUDA"
        lines = str(err).strip().splitlines()
        return lines[0] if lines else type(err).__name__
    return None


def refuse(message: str) -> int:
    """Bad input: one line on stderr, exit code 2."""
    print(f"own_training_loop.py: error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda, cuda:1, mps, ...")
    parser.add_argument("--bf16", action="store_true", help="forward pass under bf16 autocast")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads for torch (default 1)")
    args = parser.parse_args(argv)
    if args.threads < 1:
        return refuse(f"--threads: must be at least 1, got {args.threads}")
    if (problem := usable(args.device)) is not None:
        return refuse(f"--device {args.device}: {problem}")
    torch.set_num_threads(args.threads)

    data = tuple(t.to(args.device) for t in make_data())
    model, optimizer, schedule = build(args.device)
    with torch.no_grad():
        first = nn.functional.softplus(-data[1] * model(data[0])).mean().item()
    half = STEPS // 2
    train(model, optimizer, schedule, data, range(half), args.bf16)

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "checkpoint.pt"
        torch.save(
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "schedule": schedule.state_dict(),
                "step": half,
            },
            path,
        )
        last = train(model, optimizer, schedule, data, range(half, STEPS), args.bf16)

        # a fresh process would do this: build, then load tensors only (weights_only=True)
        checkpoint = torch.load(path, weights_only=True, map_location=args.device)
    resumed, resumed_optimizer, resumed_schedule = build(args.device)
    resumed.load_state_dict(checkpoint["model"])
    resumed_optimizer.load_state_dict(checkpoint["optimizer"])
    resumed_schedule.load_state_dict(checkpoint["schedule"])
    steps = range(checkpoint["step"], STEPS)
    train(resumed, resumed_optimizer, resumed_schedule, data, steps, args.bf16, log=lambda _: None)
    same = all(torch.equal(a, b) for a, b in zip(model.parameters(), resumed.parameters()))

    print(f"loss over all data: {first:.4f} before training, {last:.4f} after {STEPS} steps")
    print(f"accuracy: {accuracy(model, data):.3f}")
    print(f"resumed from the step-{half} checkpoint: identical to the uninterrupted run: {same}")
    return 0 if same and last < first else 1


if __name__ == "__main__":
    raise SystemExit(main())
