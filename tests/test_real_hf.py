"""Every attnbias optimiser trains the pretrained MiniLM through transformers.Trainer
(optimizers=(opt, None)); PolyakStep through LossHandingTrainer, which hands it the loss."""

import pytest
import torch
import torch.nn.functional as F

pytestmark = [pytest.mark.real, pytest.mark.slow]
transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from attnbias.optim import (  # noqa: E402
    MirrorDescent,
    NormalizedGD,
    PolyakStep,
    SignGD,
    SpectralDescent,
    SteepestDescent,
)

TEXTS = [
    "a wonderful , moving film", "dull and tedious from start to end", "great fun",
    "a boring mess", "charming and funny", "the worst movie of the year",
    "beautifully acted", "stupid and lame", "an excellent story", "bland , lifeless drama",
    "a delightful surprise", "awful dialogue", "terrific performances", "mediocre at best",
    "brilliant and warm", "a silly waste of time",
]  # fmt: skip
LABELS = [1, 0] * 8

# name → optimiser of the model's parameters (NGD, Polyak, MD: text-finetune's step sizes)
OPTIMIZERS = {
    "MirrorDescent": lambda params: MirrorDescent(params, lr=0.02, p=1.1),
    "NormalizedGD": lambda params: NormalizedGD(params, lr=0.1),
    "PolyakStep": lambda params: PolyakStep(params, lr=0.3, c=2.0),
    "SignGD": lambda params: SignGD(params, lr=1e-4),
    "SpectralDescent": lambda params: SpectralDescent(
        [p for p in params if p.dim() == 2],
        lr=2e-3,  # matrices only: the spectral norm
    ),
    "SteepestDescent": lambda params: SteepestDescent(params, lr=0.005, norm=3.0),
}


@pytest.fixture(scope="module")
def batch():
    from attnbias.real.minilm import load_tokenizer

    tokenizer = load_tokenizer()
    enc = tokenizer(TEXTS, padding="max_length", max_length=16, truncation=True)
    return [
        {"input_ids": torch.tensor(i), "attention_mask": torch.tensor(m), "labels": y}
        for i, m, y in zip(enc["input_ids"], enc["attention_mask"], LABELS)
    ]


def loss_of(model, rows) -> float:
    model.eval()
    with torch.no_grad():
        logits = model(
            torch.stack([r["input_ids"] for r in rows]),
            torch.stack([r["attention_mask"] for r in rows]),
        ).logits
    return float(F.cross_entropy(logits, torch.tensor([r["labels"] for r in rows])))


def trainer(trainer_class, model, optimizer, rows, tmp_path, steps=4):
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), max_steps=steps, per_device_train_batch_size=len(rows),
        learning_rate=1.0, lr_scheduler_type="constant", max_grad_norm=0.0,
        remove_unused_columns=False, label_names=["labels"], report_to=[], save_strategy="no",
        logging_strategy="no", use_cpu=True, dataloader_num_workers=0, disable_tqdm=True,
    )  # fmt: skip
    return trainer_class(
        model=model, args=args, train_dataset=rows, optimizers=(optimizer, None),
        compute_loss_func=lambda out, labels, num_items_in_batch=None: F.cross_entropy(
            out.logits, labels
        ),
    )  # fmt: skip


def fresh_model():
    from attnbias.real.minilm import MiniLMClassifier

    torch.manual_seed(0)
    return MiniLMClassifier(2)


@pytest.fixture(autouse=True)
def float32_one_thread():
    dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    yield
    torch.set_default_dtype(dtype)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_every_optimiser_lowers_the_loss_through_the_trainer(name, batch, tmp_path):
    from attnbias.real.hf import LossHandingTrainer

    model = fresh_model()
    before = loss_of(model, batch)
    optimizer = OPTIMIZERS[name](list(model.parameters()))
    trainer(LossHandingTrainer, model, optimizer, batch, tmp_path).train()
    after = loss_of(model, batch)
    assert after < before, f"{name}: loss {before:.4f} → {after:.4f}"
    if name == "PolyakStep":  # the handed loss was used: a Polyak step size was computed
        step_size = optimizer.param_groups[0]["step_size"]
        assert 0 < step_size <= 0.3 and optimizer.handed_loss is None


def test_the_plain_trainer_cannot_step_polyak_and_says_what_to_use(batch, tmp_path):
    model = fresh_model()
    optimizer = PolyakStep(model.parameters(), lr=0.3, c=2.0)
    with pytest.raises(ValueError, match="LossHandingTrainer"):
        trainer(transformers.Trainer, model, optimizer, batch, tmp_path, steps=1).train()


def test_handed_losses_of_one_step_are_summed():
    w = torch.nn.Parameter(torch.tensor([3.0]))
    optimizer = PolyakStep([w], lr=100.0, c=1.0)
    for part in (0.25, 0.75):  # two accumulated micro-batches of the loss w²/2
        (part * w.square().sum() / 2).backward()
        optimizer.hand_loss(part * w.detach().square().sum() / 2)
    optimizer.step()
    # η = L/‖∇L‖² = 4.5/9 = 0.5: w ← 3 − 0.5·3
    assert optimizer.param_groups[0]["step_size"] == pytest.approx(0.5)
    assert float(w.detach()) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="hand_loss"):
        optimizer.step()  # the handed loss was used up
