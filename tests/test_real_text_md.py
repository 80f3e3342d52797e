"""text-md under the MD paper's protocol: the key-word metric, the lexicon probe, the weight
counts, the learning-rate choice, training to a target train accuracy, the paper's model."""

import math

import numpy as np
import pytest
import torch

from attnbias.experiments import text_md
from attnbias.real.attention import keyword_attention
from attnbias.real.train import TensorData, seed_everything, train
from attnbias.real.transformer import TextTransformer

pytestmark = [pytest.mark.real, pytest.mark.usefixtures("float32_one_thread")]


def test_keyword_attention_is_the_papers_min_max_normalised_cls_row():
    # 2 sentences, 2 heads, 4 positions; sentence 1 has 3 real tokens. Only the last layer counts.
    last = torch.zeros(2, 2, 4, 4, dtype=torch.float64)
    last[0, :, 0] = torch.tensor(
        [[0.1, 0.6, 0.2, 0.1], [0.3, 0.2, 0.4, 0.1]]
    )  # head mean .2 .4 .3 .1
    last[1, :, 0] = torch.tensor([[0.5, 0.25, 0.25, 0.0], [0.5, 0.25, 0.25, 0.0]])
    first = torch.full_like(last, 0.25)
    word = torch.tensor([[0, 0, 1, 0], [0, 1, 0, 0]], dtype=torch.bool)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    out = keyword_attention((first, last), word, mask)
    # sentence 0: (0.3 − 0.1)/(0.4 − 0.1) = 2/3; sentence 1, over its 3 real tokens:
    # (0.25 − 0.25)/(0.5 − 0.25) = 0
    assert out["normalised"] == pytest.approx((2 / 3 + 0) / 2)
    assert out["raw"] == pytest.approx((0.3 + 0.25) / 2)
    assert out["chance_raw"] == pytest.approx((1 / 4 + 1 / 3) / 2)
    chance0, chance1 = np.mean([1 / 3, 1, 2 / 3, 0]), np.mean([1, 0, 0])  # real tokens only
    assert out["chance_normalised"] == pytest.approx((chance0 + chance1) / 2)
    assert out["sentences"] == 2 and out["flat_rows"] == 0
    flat = keyword_attention((first,), word, mask)  # uniform rows: min–max undefined
    assert flat["flat_rows"] == 2 and math.isnan(flat["normalised"])
    with pytest.raises(ValueError, match="exactly one token"):
        keyword_attention((last,), torch.ones(2, 4, dtype=torch.bool), mask)


@pytest.mark.slow
def test_lexicon_probe_keeps_exactly_the_sentences_with_one_single_token_word():
    from attnbias.real.minilm import load_tokenizer
    from attnbias.real.probe import lexicon_probe

    tokenizer = load_tokenizer()
    lexicon = {"good", "bad", "unwatchable"}  # "unwatchable" is several word pieces
    texts = [
        "a good film",  # kept
        "good and bad",  # two lexicon words
        "nothing to say",  # none
        "simply unwatchable stuff",  # its one lexicon word is not a single token
        "the cast is bad here",  # kept
        "good",  # kept only if "good" is known
    ]
    probe, stats = lexicon_probe(tokenizer, texts, [1, 0, 1, 0, 0, 1], lexicon, 2, 16)
    assert probe.texts == ["a good film", "the cast is bad here"] and probe.words == ["good", "bad"]
    assert stats == {"sentences": 2, "scanned": 5, "distinct_words": 2}
    assert probe.labels.tolist() == [1, 0]
    marked = probe.input_ids[probe.word_mask].tolist()
    assert marked == tokenizer.convert_tokens_to_ids(["good", "bad"])
    assert probe.word_mask.sum(1).tolist() == [1, 1]
    unknown = {tokenizer.convert_tokens_to_ids("good")}  # only "good" was seen in training
    probe, _ = lexicon_probe(tokenizer, texts, [1] * 6, lexicon, 2, 16, known=unknown)
    assert probe.words == ["good", "good"]
    with pytest.raises(ValueError, match="probe_size 5: only 3 of 6"):
        lexicon_probe(tokenizer, texts, [1] * 6, lexicon, 5, 16)
    with pytest.raises(ValueError, match="only 0"):  # the word past max_len − 2 tokens is cut
        lexicon_probe(tokenizer, ["one two three four good"], [1], lexicon, 1, 5)


@pytest.mark.slow
def test_vader_lexicon_is_read_from_its_wheel():
    from attnbias.data.text import vader_lexicon

    lexicon = vader_lexicon()
    assert len(lexicon) > 7000 and lexicon["good"] > 0 > lexicon["bad"]
    assert all(word.isalpha() and word == word.lower() for word in lexicon)


def test_weight_counts_are_the_papers_and_scale_relative():
    w = np.array([0.0, 0.01, -0.05, 0.07, -0.2, 0.061])
    counts = text_md.weight_counts({"K": w, "Q": 10 * w, "V": w}, relative=3.0)
    assert counts["above_abs_K"] == 3 and counts["above_abs_Q"] == 5  # |w| > 0.06, strictly
    rms = np.sqrt(np.mean(w**2))
    assert counts["rms_K"] == pytest.approx(rms)
    assert counts["above_rel_K"] == int((np.abs(w) > 3 * rms).sum())
    assert counts["above_rel_Q"] == counts["above_rel_K"]  # the relative count ignores scale


def test_the_learning_rate_search_picks_the_lowest_finite_tail_loss():
    assert text_md.search_score(np.array([5.0, 4.0, 3.0, 1.0])) == 1.0  # the last quarter
    assert text_md.search_score(np.array([1.0, np.nan])) == math.inf
    assert text_md.choose_lr({0.1: 0.5, 0.4: 0.3, 1.6: math.inf}) == 0.4
    with pytest.raises(ValueError, match="every learning rate of the search diverged"):
        text_md.choose_lr({0.1: math.inf})


def tiny_text(n=64, T=6, vocab=12):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(4, vocab, (n, T), generator=g)
    labels = torch.arange(n) % 2
    ids[labels == 1, 2] = 3
    ids[:, 0] = 1
    return TensorData(
        {"input_ids": ids, "attention_mask": torch.ones(n, T, dtype=torch.long)}, labels
    )


def paper_model(seed=0, dropout=0.0):
    seed_everything(seed)
    return TextTransformer(12, 2, dim=16, heads=2, layers=2, max_len=8, post_norm=True,
                           bias=False, dropout=dropout)  # fmt: skip


def test_training_stops_at_the_target_train_accuracy_or_reports_the_cap():
    data = tiny_text()
    optimizer = {"name": "adam", "lr": 1e-2}
    kwargs = dict(batch_size=16, seed=0, eval_every=4, progress=False)
    reached = train(paper_model(), data, data, optimizer, steps=400, target_train_accuracy=0.995,
                    **kwargs)  # fmt: skip
    assert reached.reached_target and len(reached.train_loss) < 400
    assert len(reached.train_loss) % 4 == 0  # stops at an epoch's end (64 / 16 = 4 steps)
    assert reached.epochs[-1]["train_accuracy"] >= 0.995
    assert all(e["train_accuracy"] < 0.995 for e in reached.epochs[:-1])
    assert reached.evals[-1]["step"] == len(reached.train_loss)  # the stopping point is evaluated
    capped = train(paper_model(), data, data, optimizer, steps=8, target_train_accuracy=0.995,
                   **kwargs)  # fmt: skip
    assert not capped.reached_target and len(capped.train_loss) == 8


def test_the_papers_model_is_post_norm_without_biases():
    model = paper_model(dropout=0.2)
    assert not any(name.endswith("bias") for name, _ in model.named_parameters())
    assert isinstance(model.encoder.norm, torch.nn.Identity)
    block = model.encoder.blocks[0]
    x = torch.randn(3, 5, 16)
    block.eval()
    out, _ = block(x)
    # post-norm: the block's output is LayerNorm'd (zero mean, unit variance per token)
    assert torch.allclose(out.mean(-1), torch.zeros(3, 5), atol=1e-5)
    model.eval()
    ids = tiny_text().inputs["input_ids"][:4]
    assert torch.equal(model(ids).logits, model(ids).logits)  # dropout off in eval mode


def test_a_missing_cuda_device_is_refused_clearly():
    from attnbias.real.runner import torch_device

    assert torch_device("cpu").type == "cpu"
    assert torch_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device here"):
            torch_device("cuda")


@pytest.mark.slow
def test_the_search_keeps_the_rate_that_trains_and_skips_the_one_that_diverges(tmp_path):
    from attnbias.experiments import load_config, run_experiment

    overrides = {"ps": [2.0], "lrs": [0.04], "lr_search": [1.0, 1e4], "search_steps": 6,
                 "seeds": 1, "order_seeds": 1, "steps": 8, "eval_every": 4}  # fmt: skip
    summary = run_experiment(load_config("text-md", quick=True, overrides=overrides), tmp_path)
    assert summary["learning_rates"] == {"2": 0.04} and summary["search_runs"] == 2
    scores = summary["lr_search"]["2"]["scores"]
    assert math.isfinite(scores["0.04"]) and not math.isfinite(float(scores["400"] or "inf"))
    (row,) = [r for r in summary["rows"] if r["variant"] == "seeds"]
    assert row["runs"] == 1 and row["reached_target"] == 0 and row["steps_run"] == [8.0, 0.0]
    per_run = summary["tables"]["text_md_runs"]  # every run, not only the means
    assert [(r["variant"], r["steps"], r["stopped by"]) for r in per_run] == [
        ("different init", 8, "step cap"),
        ("same init, data order", 8, "step cap"),
    ]
    assert len(list((tmp_path / "runs").iterdir())) == 4  # 2 search runs, 1 seed, 1 data order
    assert run_experiment(load_config("text-md", quick=True, overrides=overrides), tmp_path)[
        "reused_outputs"
    ]  # the publication lists every run it was made from, the search runs too
    assert all(c["id"].startswith("text-md/") for c in summary["claims"])
    assert all(c["supported"] is None for c in summary["claims"])  # one p: nothing to compare


def test_the_paper_size_configuration_is_the_papers_model():
    from attnbias.experiments.base import is_quick, load_config

    config = load_config("text-md", paper=True)
    shape = {k: config[k] for k in ("dim", "heads", "layers", "mlp_ratio", "max_len")}
    assert shape == {"dim": 384, "heads": 3, "layers": 3, "mlp_ratio": 4, "max_len": 512}
    assert config["post_norm"] and not config["bias"] and config["dropout"] == 0.2
    assert config["normalize"] == "none" and config["target_train_accuracy"] == 0.995
    assert config["train_size"] == 0 and config["device"] == "auto" and not is_quick(config)
    model = TextTransformer(50, 2, **{k: config[k] for k in (*shape, "post_norm", "bias")})
    assert model(torch.ones(1, 512, dtype=torch.long)).logits.shape == (1, 2)


def test_the_papers_initialisation_is_pytorchs_default():
    """init="pytorch": embeddings N(0, 1) (tokens and positions), linear layers uniform within
    ±1/√fan_in; "small": N(0, 0.02²). Anything else is refused, naming the argument."""
    torch.manual_seed(0)
    model = TextTransformer(500, 2, dim=32, heads=2, layers=1, max_len=64, init="pytorch")
    assert model.tokens.weight.std().item() == pytest.approx(1.0, abs=0.05)
    assert model.positions.std().item() == pytest.approx(1.0, abs=0.1)
    mlp_in = model.encoder.blocks[0].mlp[0].weight  # fan_in 32
    assert mlp_in.abs().max() <= 1 / math.sqrt(32) and mlp_in.std() > 0.1
    small = TextTransformer(500, 2, dim=32, heads=2, layers=1, max_len=64, init="small")
    assert small.tokens.weight.std().item() == pytest.approx(0.02, rel=0.1)
    with pytest.raises(ValueError, match="init must be"):
        TextTransformer(500, 2, init="xavier")


def run_record(p, accuracy, keyword, diverged=False):
    from attnbias.store import RunRecord, tidy

    metrics = tidy([0, 10], {"test_accuracy": [0.5, math.nan if diverged else accuracy]})
    kinds = ("above_abs", "above_rel", "hoyer", "small", "rms")
    counts = {f"{k}_{m}": math.nan if diverged else 1.0 for k in kinds for m in "KQV"}
    info = {"seconds": 1.0, "diverged": diverged, "steps_run": 10, "reached_target": False,
            "final_train_accuracy": 0.9, "keyword_normalised": None if diverged else keyword,
            "keyword_raw": None if diverged else keyword / 10, "keyword_chance_normalised": 0.5,
            "keyword_chance_raw": 0.05, "probe_accuracy": 0.6, **counts}  # fmt: skip
    return RunRecord(f"{p}-{accuracy}", {"p": p}, metrics, {}, info)


def test_diverged_runs_are_counted_and_left_out_of_the_rows():
    """A diverged run (its NaNs stored as JSON null) is counted, not averaged; if every run of
    a p diverged its numbers are NaN, and the summary does not crash."""
    records = {
        ("seeds", 1.1, 0): run_record(1.1, 0.8, 0.4),
        ("seeds", 1.1, 1): run_record(1.1, 0.7, 0.2),
        ("seeds", 1.1, 2): run_record(1.1, 0.0, 0.0, diverged=True),
        ("seeds", 2.0, 0): run_record(2.0, 0.0, 0.0, diverged=True),
    }
    rows = text_md.variant_rows({"ps": [1.1, 2.0]}, records, "seeds")
    assert rows[1.1]["runs"] == 3 and rows[1.1]["diverged"] == 1
    assert rows[1.1]["best_accuracy"] == pytest.approx([75.0, 5.0])
    assert rows[1.1]["keyword_normalised"] == pytest.approx([0.3, 0.1])
    assert rows[2.0]["diverged"] == 1 and math.isnan(rows[2.0]["best_accuracy"][0])
    assert math.isnan(rows[2.0]["keyword_normalised"][0]) and math.isnan(rows[2.0]["small_K"])


@pytest.mark.parametrize("init", ["pytorch", "small"])
def test_the_initialisation_pilots_are_valid_configs_differing_only_in_init(init):
    """docs/REAL_DATA.md quotes `attnbias run benchmarks/pilots/text-md-init-*.toml`."""
    from pathlib import Path

    from attnbias.experiments.base import load_config, read_toml, validate_config

    pilots = Path(__file__).parents[1] / "benchmarks" / "pilots"
    fields = read_toml(pilots / f"text-md-init-{init}.toml")
    other = read_toml(pilots / f"text-md-init-{'small' if init == 'pytorch' else 'pytorch'}.toml")
    assert fields.pop("experiment") == "text-md" and fields.pop("init") == init
    assert fields == {k: v for k, v in other.items() if k not in ("experiment", "init")}
    config = validate_config(load_config("text-md", overrides={**fields, "init": init}))
    assert config["steps"] == 900 and config["ps"] == [2.0] and config["lr_search"] == [1.0]
