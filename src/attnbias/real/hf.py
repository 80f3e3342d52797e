"""The attnbias optimisers in the Hugging Face `transformers.Trainer`.

Every attnbias optimiser is a `torch.optim.Optimizer`, so it goes in as
`Trainer(..., optimizers=(optimizer, None))` (None: the Trainer's default linear schedule scales
each group's `lr`). The Trainer calls `optimizer.step()` without a closure, which is all
MirrorDescent, NormalizedGD, SignGD, SpectralDescent and SteepestDescent need. PolyakStep needs
the loss: train it with `LossHandingTrainer`, which hands each micro-batch's loss to the
optimiser (PolyakStep.hand_loss) before the Trainer steps it. Gradient clipping (the Trainer's
`max_grad_norm`, 1.0 by default) changes the gradient these rules normalise or divide by: pass
`max_grad_norm=0` to train with the rule as written.
"""

from __future__ import annotations

from transformers import Trainer


def loss_taker(optimizer):
    """The optimiser inside the Trainer's wrapper (accelerate's AcceleratedOptimizer) if it
    takes handed losses (has hand_loss), else None."""
    while optimizer is not None and not hasattr(optimizer, "hand_loss"):
        optimizer = getattr(optimizer, "optimizer", None)
    return optimizer


class LossHandingTrainer(Trainer):
    """A Trainer whose every training step hands its loss to the optimiser when the optimiser
    takes one (PolyakStep); with any other optimiser it is the plain Trainer."""

    def training_step(self, model, inputs, num_items_in_batch=None):
        loss = super().training_step(model, inputs, num_items_in_batch)
        taker = loss_taker(self.optimizer)
        if taker is not None:
            # The loss backward() was called on (already divided for gradient accumulation):
            # the handed losses of one step sum to the loss whose gradient is in .grad.
            taker.hand_loss(loss)
        return loss
