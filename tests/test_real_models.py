"""Real models: the training loop (seeded, resumable), the optimiser factory, attention
analysis, and the quick versions of the three real-data experiments."""

import json

import pytest
import torch

from attnbias.real.attention import attention_maps, attention_sparsity, token_mass, uniform_mass
from attnbias.real.train import TensorData, make_optimizer, seed_everything, train
from attnbias.real.transformer import TextTransformer
from attnbias.real.vit import ViT

pytestmark = [pytest.mark.real, pytest.mark.usefixtures("float32_one_thread")]


OPTIMIZERS = [
    {"name": "sgd", "lr": 0.5},
    {"name": "adam", "lr": 1e-2},
    {"name": "sngd", "lr": 0.3},
    {"name": "sps", "lr_max": 1.0, "c": 0.5},
    {"name": "md", "p": 1.1, "lr": 0.01, "normalize": "per_tensor"},
    {"name": "md", "p": 3.0, "lr": 0.003, "normalize": "per_tensor"},
]


def tiny_text(n=32, T=6, vocab=12, seed=0):
    """Sentences whose label is whether token 3 occurs, [CLS] = 1 first, some padding."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, vocab, (n, T), generator=g)
    labels = torch.arange(n) % 2
    ids[labels == 1, 2] = 3
    ids[:, 0] = 1
    mask = torch.ones(n, T, dtype=torch.long)
    mask[::3, -2:] = 0
    ids[mask == 0] = 0
    return TensorData({"input_ids": ids, "attention_mask": mask}, labels)


def tiny_model(seed=0):
    seed_everything(seed)
    return TextTransformer(vocab_size=12, num_classes=2, dim=16, heads=2, layers=2, max_len=8)


def test_factory_builds_every_optimiser_and_names_bad_fields():
    params = [torch.nn.Parameter(torch.zeros(3))]
    for config in OPTIMIZERS:
        assert make_optimizer(params, config).param_groups[0]["lr"] > 0
    with pytest.raises(ValueError, match=r"optimizer\.name"):
        make_optimizer(params, {"name": "lion", "lr": 1})
    with pytest.raises(ValueError, match=r"no field.*'momentum'"):
        make_optimizer(params, {"name": "md", "p": 1.1, "lr": 1, "momentum": 0.9})
    with pytest.raises(ValueError, match=r"needs field.*'p'"):
        make_optimizer(params, {"name": "md", "lr": 1})


@pytest.mark.parametrize("optimizer", OPTIMIZERS, ids=lambda o: f"{o['name']}{o.get('p', '')}")
def test_every_optimiser_trains_the_text_model_and_the_vit(optimizer):
    data = tiny_text()
    model = tiny_model()
    history = train(model, data, data, optimizer, steps=60, batch_size=16, seed=0, eval_every=30)
    assert not history.diverged
    assert history.evals[-1]["test_loss"] < history.evals[0]["test_loss"]

    seed_everything(0)
    vit = ViT(image_size=8, patch_size=4, num_classes=2, dim=16, heads=2, layers=1)
    images = TensorData({"pixels": torch.rand(16, 8, 8)}, torch.arange(16) % 2)
    images.inputs["pixels"][images.labels == 1, :4, :4] += 1.0
    history = train(vit, images, images, optimizer, steps=30, batch_size=8, seed=0, eval_every=30)
    assert history.evals[-1]["test_loss"] < history.evals[0]["test_loss"]


@pytest.mark.parametrize("optimizer", OPTIMIZERS[:5], ids=lambda o: o["name"])
def test_resume_from_a_checkpoint_matches_an_uninterrupted_run(tmp_path, optimizer):
    data = tiny_text()
    kwargs = dict(batch_size=8, seed=3, progress=False)  # 4 steps per epoch
    straight = tiny_model()
    full = train(straight, data, data, optimizer, steps=12, **kwargs)

    resumed = tiny_model()
    train(resumed, data, data, optimizer, steps=4, checkpoint_dir=tmp_path, **kwargs)
    fresh = tiny_model(seed=99)  # a new process: different weights until the checkpoint loads
    second = train(fresh, data, data, optimizer, steps=12, checkpoint_dir=tmp_path, **kwargs)

    for (name, a), b in zip(straight.state_dict().items(), fresh.state_dict().values()):
        assert torch.equal(a, b), name
    assert second.train_loss == full.train_loss
    assert [e["test_loss"] for e in second.evals] == [e["test_loss"] for e in full.evals]


def test_a_run_killed_mid_way_resumes_from_its_last_epoch(tmp_path):
    data = tiny_text()
    optimizer = {"name": "adam", "lr": 1e-2}
    kwargs = dict(steps=12, batch_size=8, seed=1, progress=False, eval_every=2)
    straight = tiny_model()
    train(straight, data, data, optimizer, **kwargs)

    def crash_at_step_6(model):
        if crash_at_step_6.evals == 3:  # evaluations at steps 0, 2, 4, then 6
            raise KeyboardInterrupt
        crash_at_step_6.evals += 1
        return {}

    crash_at_step_6.evals = 0
    with pytest.raises(KeyboardInterrupt):
        train(tiny_model(), data, data, optimizer, checkpoint_dir=tmp_path, **kwargs,
              extra_metrics=crash_at_step_6)  # fmt: skip
    assert torch.load(tmp_path / "last.pt", weights_only=True)["step"] == 4  # epoch 1 done
    resumed = tiny_model(seed=5)
    train(resumed, data, data, optimizer, checkpoint_dir=tmp_path, **kwargs)
    for a, b in zip(straight.parameters(), resumed.parameters()):
        assert torch.equal(a, b)


def test_attention_tools_on_the_tiny_model():
    data = tiny_text(n=6)
    model = tiny_model()
    maps = attention_maps(model, data.inputs)
    assert len(maps) == 2 and maps[0].shape == (6, 2, 6, 6)
    for a in maps:
        assert torch.allclose(a.sum(-1), torch.ones(6, 2, 6), atol=1e-6)
        assert torch.all(a[0::3, :, :, -2:] == 0)  # padding gets no attention
    everything = data.inputs["attention_mask"].bool()
    assert torch.allclose(token_mass(maps, everything), torch.ones(2, 2), atol=1e-6)
    mass = token_mass(maps, data.inputs["input_ids"] == 3)
    assert mass.shape == (2, 2) and torch.all((mass >= 0) & (mass <= 1))

    uniform = (torch.ones(1, 1, 4, 4) / 4,)
    one_hot = (torch.eye(4)[None, None],)
    assert torch.allclose(attention_sparsity(uniform)["entropy"], torch.ones(1, 1))
    assert torch.allclose(attention_sparsity(one_hot)["sparsity"], torch.ones(1, 1))
    assert uniform_mass(torch.tensor([[True, False]]), torch.tensor([[1, 1]])) == 0.5

    class NoMaps(torch.nn.Module):
        def forward(self, **kwargs):
            return type("Out", (), {"attentions": None})()

    with pytest.raises(ValueError, match="eager"):
        attention_maps(NoMaps(), {})


@pytest.mark.slow
def test_attention_tools_on_pretrained_minilm():
    from transformers import BertModel

    from attnbias.real.minilm import MiniLMClassifier, load_tokenizer, minilm_path
    from attnbias.real.probe import build_probe

    tokenizer = load_tokenizer()
    probe = build_probe(tokenizer)
    assert len(probe.texts) == 120 and probe.word_mask.sum(1).min() >= 1
    assert probe.input_ids[probe.word_mask].ne(tokenizer.pad_token_id).all()
    bert = BertModel.from_pretrained(minilm_path(), attn_implementation="eager")
    for model in (bert, MiniLMClassifier(num_classes=3)):
        maps = attention_maps(model, probe.inputs)
        assert len(maps) == 6 and maps[0].shape[:2] == (120, 12)
        real = probe.attention_mask[:, None, :, None].bool()
        for a in maps:
            sums = a.sum(-1, keepdim=True)[real.expand((*a.shape[:3], 1))]
            assert torch.allclose(sums, torch.ones_like(sums), atol=1e-5)
        mass = token_mass(maps, probe.word_mask)
        assert mass.shape == (6, 12) and torch.all((mass > 0) & (mass < 1))
        sparsity = attention_sparsity(maps, probe.attention_mask)["sparsity"]
        assert sparsity.shape == (6, 12) and torch.all((sparsity >= 0) & (sparsity <= 1))


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["text-md", "text-finetune", pytest.param("vision", marks=pytest.mark.fashion_mnist)]
)
def test_quick_experiment_runs_and_resumes(tmp_path, name):
    from attnbias.experiments import load_config, run_experiment
    from attnbias.judging.claims import STATUSES

    config = load_config(name, quick=True)
    summary = run_experiment(config, tmp_path)
    assert summary["claims"] and all(c["status"] in STATUSES for c in summary["claims"])
    assert (tmp_path / "summary.json").exists()
    assert list(tmp_path.glob("*.png")) and not list(tmp_path.glob("*.pdf"))  # PNG by default
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert not (tmp_path / "checkpoints").exists() or not any((tmp_path / "checkpoints").iterdir())
    again = run_experiment(config, tmp_path)  # every run is stored: nothing retrains
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == runs
    assert json.dumps(again["tables"]) == json.dumps(summary["tables"])


def test_experiment_config_errors_name_the_field(tmp_path):
    from attnbias.experiments import load_config, run_experiment

    with pytest.raises(ValueError, match=r"text-md: lrs must have one entry per entry of ps"):
        run_experiment(load_config("text-md", quick=True, overrides={"lrs": [0.1]}), tmp_path)
    with pytest.raises(ValueError, match=r"vision: datasets must be a non-empty list from"):
        run_experiment(
            load_config("vision", quick=True, overrides={"datasets": ["cifar"]}), tmp_path
        )
