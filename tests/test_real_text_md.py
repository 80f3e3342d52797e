"""text-md under the MD paper's protocol: the key-word metric, the lexicon probe, the weight
counts, the learning-rate choice, training to a target train accuracy, the paper's model."""

import math

import numpy as np
import pytest
import torch

from attnbias.experiments import mcnemar, text_md
from attnbias.real.attention import keyword_attention
from attnbias.real.train import TensorData, seed_everything, train
from attnbias.real.transformer import TextTransformer
from attnbias.real.weights import kqv_weights

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


def test_weight_counts_are_the_papers_and_mapped_by_the_initial_scale():
    w = np.array([0.0, 0.01, -0.05, 0.07, -0.2, 0.061])
    initial = {m: np.full(6, 0.03) for m in "KQV"}  # initial RMS entry 0.03
    counts = text_md.weight_counts({"K": w, "Q": 10 * w, "V": w}, initial)
    assert counts["above_abs_K"] == 3 and counts["above_abs_Q"] == 5  # |w| > 0.06, strictly
    threshold = text_md.INITIAL_SCALE_RATIO * 0.03  # 0.06 × 0.03 / 0.02946 = 0.0611
    assert counts["threshold_K"] == pytest.approx(threshold) and counts["initial_rms_K"] == 0.03
    assert counts["above_init_K"] == int((np.abs(w) > threshold).sum()) == 2
    assert counts["rms_K"] == pytest.approx(np.sqrt(np.mean(w**2)))


def test_the_mapped_threshold_is_the_papers_on_the_papers_layers():
    """On the paper's 384-wide layers at PyTorch's default initialisation the mapped threshold
    is the paper's 0.06 (to the sampling error of the initial RMS); on our 64-wide ones it is
    0.06 × √(384/64)."""
    torch.manual_seed(0)
    for dim, expected in ((384, 0.06), (64, 0.06 * math.sqrt(384 / 64))):
        model = TextTransformer(50, 2, dim=dim, heads=2, layers=2, max_len=8, init="pytorch")
        weights = kqv_weights(model)
        counts = text_md.weight_counts(weights, weights)
        assert counts["threshold_K"] == pytest.approx(expected, rel=0.01)
        assert counts["above_init_K"] == 0  # uniform ±√3 RMS: no initial entry is above


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
    from attnbias.real.adapters import torch_device

    assert torch_device("cpu").type == "cpu"
    assert torch_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device here"):
            torch_device("cuda")


TINY = {"ps": [2.0], "lrs": [0.04], "lr_search": [1.0, 1e4], "seeds": 1, "order_seeds": 1,
        "steps": 8, "eval_every": 4, "train_size": 200, "validation_size": 100,
        "test_size": 100, "probe_size": 20, "minilm_steps": 2, "minilm_eval_every": 2}  # fmt: skip


@pytest.mark.slow
def test_the_search_keeps_the_rate_that_trains_and_skips_the_one_that_diverges(tmp_path):
    from attnbias.experiments import load_config, run_experiment

    summary = run_experiment(load_config("text-md", quick=True, overrides=TINY), tmp_path)
    assert summary["learning_rates"] == {"2": 0.04} and summary["search_runs"] == 1
    search = summary["lr_search"]["2"]
    assert search["tried"] == [0.04, 400.0] and search["chosen"] == 0.04
    assert not search["interior"]  # the diverged rate is above, nothing was tried below
    (row,) = [r for r in summary["rows"] if r["variant"] == "seeds"]
    assert row["runs"] == 1 and row["reached_target"] == 0 and row["steps_run"][0] == 8.0
    per_run = summary["tables"]["text_md_runs"]  # every run, not only the means
    assert [(r["variant"], r["steps"], r["stopped by"]) for r in per_run] == [
        ("different init", 8, "budget (all steps)"),
        ("same init, data order", 8, "budget (all steps)"),
    ]  # the default protocol trains every run for its whole budget
    # the diverged search run, the seed run (the search's chosen one), a data order, MiniLM
    assert len(list((tmp_path / "runs").iterdir())) == 4
    assert run_experiment(load_config("text-md", quick=True, overrides=TINY), tmp_path)[
        "reused_outputs"
    ]  # the publication lists every run it was made from, the search runs too
    assert all(c["id"].startswith("text-md/") for c in summary["claims"])
    assert all(c["status"] == "not applicable" for c in summary["claims"])  # one p
    counts = summary["data"]
    assert (counts["corpus_train"], counts["test"]) == (10201, 2551)
    assert counts["train"] + counts["validation"] == 10201
    assert (counts["train_used"], counts["validation_used"], counts["test_used"]) == (200, 100, 100)
    references = summary["baselines"]
    assert set(references) == {"majority", "bag_of_words", "minilm"}
    assert references["majority"]["class"] == 1  # "fresh": 59 % of the training snippets
    assert references["majority"]["test_accuracy"] == pytest.approx(
        100 * counts["test_share_of_class_1"], abs=0.01
    )


def test_the_paper_size_configuration_is_the_papers_model():
    from attnbias.experiment_registry import load_config
    from attnbias.experiments.base import is_quick

    config = load_config("text-md", paper=True)
    shape = {k: config[k] for k in ("dim", "heads", "layers", "mlp_ratio", "max_len")}
    assert shape == {"dim": 384, "heads": 3, "layers": 3, "mlp_ratio": 4, "max_len": 512}
    assert config["post_norm"] and not config["bias"] and config["dropout"] == 0.2
    assert config["normalize"] == "none" and config["target_train_accuracy"] == 0.995
    assert config["protocol"] == "target"  # the paper's stopping rule, unchanged
    # the paper's rates (8e-4, 4e-4, 4e-6 for its summed loss over its batch of 100) as the
    # centres of the grids, for our mean loss
    assert config["batch_size"] == 100
    assert config["lrs"] == pytest.approx([8e-4 * 100, 4e-4 * 100, 4e-6 * 100], rel=1e-12)
    assert config["ps"] == [1.1, 2.0, 3.0]
    assert load_config("text-md")["protocol"] == "budget"  # the default: judged at E epochs
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


@pytest.mark.parametrize("init", ["pytorch", "small"])
def test_the_initialisation_pilots_are_valid_configs_differing_only_in_init(init):
    """docs/REAL_DATA.md quotes `attnbias run benchmarks/pilots/text-md-init-*.toml`."""
    from pathlib import Path

    from attnbias.config import read_toml
    from attnbias.experiment_registry import load_config, validate_config

    pilots = Path(__file__).parents[1] / "benchmarks" / "pilots"
    fields = read_toml(pilots / f"text-md-init-{init}.toml")
    other = read_toml(pilots / f"text-md-init-{'small' if init == 'pytorch' else 'pytorch'}.toml")
    assert fields.pop("experiment") == "text-md" and fields.pop("init") == init
    assert fields == {k: v for k, v in other.items() if k not in ("experiment", "init")}
    config = validate_config(load_config("text-md", overrides={**fields, "init": init}))
    assert config["steps"] == 900 and config["ps"] == [2.0] and config["lr_search"] == [1.0]


# --- the split: train, validation and test share no snippet and no movie


@pytest.mark.slow
def test_train_validation_and_test_share_no_snippet_and_no_movie():
    from attnbias.data import splits

    found = splits.train_validation_test("rotten_tomatoes", 0.1)
    texts = {name: set(getattr(found, name).texts) for name in ("train", "validation", "test")}
    assert sum(len(t) for t in texts.values()) == 10201 + 2551  # every snippet once
    assert not (texts["train"] & texts["validation"]) and not (texts["train"] & texts["test"])
    assert not (texts["validation"] & texts["test"])
    movies = splits.rotten_tomatoes_movies()
    groups = {name: {movies[t] for t in ts} for name, ts in texts.items()}
    assert not (groups["train"] & groups["validation"]) and not (groups["train"] & groups["test"])
    assert not (groups["validation"] & groups["test"])
    counts = found.counts()
    assert counts == {"corpus_train": 10201, "train": 9131, "validation": 1070, "test": 2551,
                      "train_groups": 360, "validation_groups": 40}  # fmt: skip
    assert all(splits.in_validation(movies[t], 0.1) for t in found.validation.texts)


def test_a_validation_split_is_carved_by_the_hash_of_each_group():
    from attnbias.data import splits
    from attnbias.data.text import TextSplit

    texts = [f"snippet {i}" for i in range(200)]
    split = TextSplit(texts, np.arange(200) % 2, ("a", "b"))
    groups = [f"movie {i // 4}" for i in range(200)]  # four snippets per movie
    rest, validation = splits.carve(split, groups, 0.3)
    assert len(rest) + len(validation) == 200 and 0 < len(validation) < 200
    held = {groups[texts.index(t)] for t in validation.texts}
    assert held == {g for g in groups if splits.in_validation(g, 0.3)}
    assert not held & {groups[texts.index(t)] for t in rest.texts}  # a movie on one side only
    reordered = TextSplit(texts[::-1], split.labels[::-1], split.classes)  # order-independent
    assert set(splits.carve(reordered, groups[::-1], 0.3)[1].texts) == set(validation.texts)
    for share in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="validation share must be in"):
            splits.carve(split, groups, share)
    with pytest.raises(ValueError, match="groups: 3 for 200 snippets"):
        splits.carve(split, groups[:3], 0.3)


# --- selection: validation chooses, test never does


def test_the_chosen_evaluation_is_the_best_validation_accuracy_then_loss_then_earliest():
    from attnbias.experiments.real_runs import chosen_evaluation

    assert chosen_evaluation([0.5, 0.7, 0.6], [1.0, 0.9, 0.1]) == 1
    assert chosen_evaluation([0.5, 0.7, 0.7], [1.0, 0.9, 0.8]) == 2  # tie: the lower loss
    assert chosen_evaluation([0.7, 0.7, 0.7], [0.8, 0.8, 0.8]) == 0  # then the earlier
    assert chosen_evaluation([math.nan, 0.6], [0.1, math.nan]) == 1  # NaN never wins
    with pytest.raises(ValueError, match="no evaluation"):
        chosen_evaluation([], [])


def chooser_run(tmp_path, test_labels=None, steps=12):
    from attnbias.experiments.real_runs import ValidationChooser

    data = tiny_text()
    test = data if test_labels is None else TensorData(data.inputs, test_labels)
    chooser = ValidationChooser(data.subset(32), test, tmp_path / "ck")
    history = train(paper_model(), data, None, {"name": "md", "p": 2.0, "lr": 0.05},
                    steps=steps, batch_size=16, seed=0, eval_every=2, progress=False,
                    checkpoint_dir=tmp_path / "ck", extra_metrics=chooser)  # fmt: skip
    return chooser, history


def test_the_chooser_reports_the_test_predictions_of_the_validation_chosen_checkpoint(tmp_path):
    from attnbias.experiments.real_runs import chosen_evaluation

    chooser, history = chooser_run(tmp_path)
    table = history.eval_table()
    assert set(table) == {"step", "val_loss", "val_accuracy", "test_loss", "test_accuracy"}
    chosen, predicted = chooser.report(history)
    k = chosen_evaluation(table["val_accuracy"], table["val_loss"])
    assert chosen["chosen_step"] == table["step"][k]
    assert chosen["chosen_test_accuracy"] == table["test_accuracy"][k]
    labels = tiny_text().labels.numpy()
    assert np.mean(predicted == labels) == pytest.approx(table["test_accuracy"][k])
    assert chosen["best_test_accuracy_unselected"] == table["test_accuracy"].max()
    # A resumed run (same checkpoint directory) reads the kept predictions back.
    from attnbias.experiments.real_runs import ValidationChooser

    again = ValidationChooser(tiny_text().subset(32), tiny_text(), tmp_path / "ck")
    assert np.array_equal(again.chosen["test_predicted"], predicted)
    assert again.report(history)[0] == chosen
    with pytest.raises(ValueError, match="not the chosen checkpoint of this run"):
        ValidationChooser(tiny_text().subset(32), tiny_text().subset(10), tmp_path / "ck")
    again.chosen["val_loss"] = -1.0  # predictions of another checkpoint: refused, not reported
    with pytest.raises(ValueError, match="not those of the chosen checkpoint"):
        again.report(history)


def test_predict_gives_each_example_its_own_prediction_in_data_order():
    """predict_classes scores texts shortest first; what it returns is in data order and is what the
    model gives each text alone."""
    import types

    import torch.nn.functional as F

    from attnbias.experiments.real_runs import predict_classes

    class ByContent(torch.nn.Module):  # logits that differ from text to text
        def forward(self, input_ids, attention_mask):
            s = (input_ids * attention_mask).sum(1).double()
            return types.SimpleNamespace(logits=torch.stack([s.sin(), s.cos()], 1))

    data = tiny_text(n=40)
    lengths = 2 + torch.arange(40) * 7 % 5  # 2 … 6 real tokens, shuffled
    mask = (torch.arange(6)[None, :] < lengths[:, None]).long()
    ids = data.inputs["input_ids"].masked_fill(mask == 0, 0)
    padded = TensorData({"input_ids": ids, "attention_mask": mask}, data.labels)
    assert not torch.equal(padded.shortest_first(), torch.arange(40))
    model = ByContent()
    predicted, loss = predict_classes(model, padded, batch_size=7)
    logits = torch.cat([model(**padded.batch(slice(i, i + 1))[0]).logits for i in range(40)])
    assert 0 < predicted.sum() < 40  # both classes: a misplaced prediction would show
    assert np.array_equal(predicted, logits.argmax(-1).numpy())
    assert loss == pytest.approx(float(F.cross_entropy(logits, data.labels)), rel=1e-12)


def test_changing_only_test_labels_changes_no_chosen_checkpoint(tmp_path):
    """The same run with every test label flipped: the same checkpoint is chosen, and its test
    accuracy is the complement."""
    first, history = chooser_run(tmp_path / "a")
    flipped, flipped_history = chooser_run(tmp_path / "b", 1 - tiny_text().labels)
    a, b = first.report(history)[0], flipped.report(flipped_history)[0]
    assert a["chosen_step"] == b["chosen_step"] and a["chosen_val_loss"] == b["chosen_val_loss"]
    assert a["chosen_test_accuracy"] == pytest.approx(1 - b["chosen_test_accuracy"])


@pytest.mark.slow
def test_changing_only_test_labels_changes_no_learning_rate_or_checkpoint(tmp_path, monkeypatch):
    """text-md end to end, twice: once as is, once with every test label flipped. Every choice
    (each p's rate, each run's checkpoint, the bag-of-words C, MiniLM's checkpoint) is the
    same; the test accuracies are the complements."""
    from attnbias.data import splits
    from attnbias.data.text import TextSplit
    from attnbias.experiments import load_config, run_experiment

    overrides = {**TINY, "ps": [1.1, 2.0], "lrs": [0.1, 0.2], "lr_search": [0.5, 1.0, 2.0],
                 "order_seeds": 0, "steps": 12, "lr_extensions": 0}  # fmt: skip
    config = load_config("text-md", quick=True, overrides=overrides)
    plain = run_experiment(config, tmp_path / "plain")
    original = splits.train_validation_test

    def flipped_test(*args, **kwargs):
        found = original(*args, **kwargs)
        test = found.test
        found.test = TextSplit(test.texts, 1 - test.labels, test.classes)
        return found

    monkeypatch.setattr(text_md, "train_validation_test", flipped_test)
    flipped = run_experiment(config, tmp_path / "flipped")

    def choices(summary):
        runs = [(r["p"], r["lr"], r["chosen step"], r["val. acc. (%)"])
                for r in summary["tables"]["text_md_runs"]]  # fmt: skip
        refs = summary["baselines"]
        return (summary["lr_search"], runs, refs["bag_of_words"]["C"],
                refs["minilm"]["chosen_step"])  # fmt: skip

    assert choices(plain) == choices(flipped)
    for a, b in zip(plain["tables"]["text_md_runs"], flipped["tables"]["text_md_runs"]):
        assert float(a["test acc. (%)"]) == pytest.approx(100 - float(b["test acc. (%)"]))


# --- the learning-rate grid brackets the chosen rate


def test_the_rate_search_extends_its_grid_until_the_chosen_rate_is_inside():
    from attnbias.experiments.real_runs import search_rates

    rounds = []

    def score(pending):  # best at 0.8; 3.2 and above diverge
        rounds.append(pending)
        return {k: {r: (-math.inf,) if r >= 3.2 else (-abs(math.log(r / 0.8)),) for r in rates}
                for k, rates in pending.items()}  # fmt: skip

    found = search_rates({"a": [0.1, 0.2], "b": [0.4, 0.8, 1.6]}, score, 2.0, 3)
    assert found["a"].tried == [0.1, 0.2, 0.4, 0.8, 1.6] and found["a"].chosen == 0.8
    assert found["a"].interior and found["b"].interior and found["b"].tried == [0.4, 0.8, 1.6]
    assert rounds[1] == {"a": [0.4]} and len(rounds) == 4  # b needed no extension
    capped = search_rates({"a": [0.1, 0.2]}, score, 2.0, 1)
    assert capped["a"].chosen == 0.4 and not capped["a"].interior  # still at the edge
    above = search_rates({"a": [1.6]}, score, 2.0, 1)  # one rate: both edges tried
    assert above["a"].tried == [0.8, 1.6, 3.2] and above["a"].chosen == 0.8
    assert not above["a"].interior  # the best is now the lower edge: one more round needed
    tie = search_rates({"a": [0.4, 1.6]}, lambda p: {"a": {r: (1.0,) for r in p["a"]}}, 2.0, 0)
    assert tie["a"].chosen == 0.4  # a tie goes to the smaller rate
    with pytest.raises(ValueError, match="every learning rate tried diverged"):
        search_rates({"a": [4.0, 8.0]}, score, 2.0, 0)


def test_a_search_run_scores_by_the_target_then_validation_only():
    from attnbias.store import RunRecord

    def record(reached, val, loss, diverged=False, test=0.0):
        info = {
            "reached_target": reached,
            "chosen_val_accuracy": val,
            "chosen_val_loss": loss,
            "chosen_test_accuracy": test,
            "status": "diverged" if diverged else "finished",
        }
        return RunRecord("k", {}, None, {}, info)  # fmt: skip

    assert text_md.search_score(record(True, 0.6, 0.5)) > text_md.search_score(
        record(False, 0.9, 0.1)
    )  # a rate that reached the target beats any that did not
    assert text_md.search_score(record(True, 0.6, 0.5, test=0.0)) == text_md.search_score(
        record(True, 0.6, 0.5, test=1.0)
    )  # test is never read
    assert text_md.search_score(record(True, 0.9, 0.1, diverged=True))[0] == -math.inf
    # under the equal-budget protocol no run has a target: validation alone decides
    assert text_md.search_score(record(False, 0.9, 0.1), "budget") > text_md.search_score(
        record(True, 0.6, 0.5), "budget"
    )


def test_the_half_budget_reading_chooses_on_validation_in_the_first_half_only():
    import pyarrow as pa

    from attnbias.store import RunRecord

    evals = {"val_accuracy": [0.5, 0.7, 0.9], "val_loss": [0.7, 0.6, 0.2],
             "test_accuracy": [0.55, 0.6, 0.8]}  # fmt: skip
    rows = [(step, name, values[i]) for name, values in evals.items()
            for i, step in enumerate((0, 4, 8))]  # fmt: skip
    metrics = pa.table({"step": [r[0] for r in rows], "metric": [r[1] for r in rows],
                        "value": [r[2] for r in rows]})  # fmt: skip
    info = {"epoch_train_accuracy": [[4, 0.55], [8, 0.75]], "status": "finished"}
    half = text_md.half_budget(RunRecord("k", {"steps": 8}, metrics, {}, info))
    # steps ≤ 4: validation picks step 4 (0.7 > 0.5), not step 8 (0.9 comes later)
    assert half == pytest.approx({"half_test_accuracy": 60.0, "half_train_accuracy": 55.0})
    diverged = RunRecord("k", {"steps": 8}, metrics, {}, {**info, "status": "diverged"})
    assert all(math.isnan(v) for v in text_md.half_budget(diverged).values())


# --- paired statistics and the verdicts they give


def test_the_accuracy_claim_reads_the_paired_differences_and_the_protocol():
    import claim_cases_real

    collected = claim_cases_real.md_collected(True)
    best, every, *_ = text_md.text_md_claims(collected)
    lo, mid = collected[1.1]["values"], collected[2.0]["values"]
    differences = lo["test_accuracy"] - mid["test_accuracy"]
    assert best.effect.estimate == pytest.approx(differences.mean())
    assert best.effect.low < differences.mean() < best.effect.high and best.effect.n == 6
    assert best.status == "supported" and every.status == "supported"
    assert best.evidence["mcnemar_pooled_test_predictions"]["seeds"] == 6
    collected[2.0]["reached"] = np.array([True] * 5 + [False])  # one ℓ2 run short of 99.5 %
    best, every, *_ = text_md.text_md_claims(collected)
    assert best.status == every.status == "inconclusive"
    assert "ℓ2-MD: 5/6 runs reached the training target" in best.unmet


def test_under_the_budget_protocol_no_target_is_required_and_e_half_is_shown():
    import claim_cases_real

    collected = claim_cases_real.md_collected(True)
    for c in collected.values():
        c["reached"] = np.zeros_like(c["reached"], dtype=bool)  # nobody at 99.5 %
        c["values"]["half_test_accuracy"] = c["values"]["test_accuracy"] - 1.0
    best, every, *_ = text_md.text_md_claims(collected, "budget")
    assert best.status == every.status == "supported" and not best.unmet
    lo, mid = collected[1.1]["values"], collected[2.0]["values"]
    half = lo["half_test_accuracy"] - mid["half_test_accuracy"]
    assert best.evidence["test_accuracy_at_half_budget_difference"].startswith(
        f"{half.mean():.4g} ["
    )
    assert all("test_accuracy_at_half_budget_difference" in p.evidence for p in every.parts)
    best, *_ = text_md.text_md_claims(collected, "target")  # the paper's rule: inconclusive
    assert best.status == "inconclusive"


def test_mcnemar_is_the_exact_binomial_test_of_the_pooled_discordant_pairs():
    from scipy import stats

    assert mcnemar.mcnemar_test(10, 2)["p_value"] == pytest.approx(
        stats.binomtest(10, 12, 0.5).pvalue
    )
    assert math.isnan(mcnemar.mcnemar_test(0, 0)["p_value"])
    a = [np.array([1, 1, 0, 0], bool), np.array([1, 0, 1, 1], bool), None]
    b = [np.array([1, 0, 1, 0], bool), np.array([0, 0, 0, 1], bool), np.ones(4, bool)]
    pooled = mcnemar.pooled_mcnemar(a, b)  # the diverged seed (None) is left out
    assert (pooled["a_right_b_wrong"], pooled["b_right_a_wrong"], pooled["seeds"]) == (3, 1, 2)


# --- reference models


def test_the_reference_models_choose_on_validation_only():
    from attnbias.experiments import baselines

    words = ["good", "great", "fine", "bad", "awful", "dull", "plot", "cast", "scene", "story"]
    rng = np.random.default_rng(0)

    def split(n):  # one sentiment word, two neutral ones, 20 % of the labels flipped
        labels = rng.integers(0, 2, n)
        texts = [" ".join([rng.choice(words[:3] if y else words[3:6]), *rng.choice(words[6:], 2)])
                 for y in labels]  # fmt: skip
        noisy = np.where(rng.random(n) < 0.2, 1 - labels, labels)
        return texts, noisy

    texts = {"train": split(80), "validation": split(40), "test": split(40)}
    cs = [0.001, 0.01, 0.1, 1.0, 10.0]
    found = baselines.bag_of_words(texts, cs)
    by_c = found["val_accuracy_by_C"]
    assert found["C"] == max(cs, key=lambda c: by_c[f"{c:g}"])  # best on validation, ties: smaller
    assert found["C_interior"] == (cs[0] < found["C"] < cs[-1])
    flipped = {**texts, "test": (texts["test"][0], 1 - texts["test"][1])}
    again = baselines.bag_of_words(flipped, cs)
    assert again["C"] == found["C"] and again["val_accuracy_by_C"] == by_c
    assert again["test_accuracy"] == pytest.approx(100 - found["test_accuracy"])
    majority = baselines.majority_class([1, 1, 0], [0, 1], [1, 1, 1, 0])
    assert majority == {"label": "majority class (1)", "class": 1, "val_accuracy": 50.0,
                        "test_accuracy": 75.0}  # fmt: skip


def test_the_cuda_pilots_are_valid_configs_of_the_default_and_the_paper_model():
    """docs/REAL_DATA.md quotes `attnbias run benchmarks/pilots/text-md-cuda.toml` and
    `…-paper-cuda.toml`: the default model, and the [paper] table's model size, on CUDA."""
    from pathlib import Path

    from attnbias.config import read_toml
    from attnbias.experiment_registry import load_config, validate_config

    pilots = Path(__file__).parents[1] / "benchmarks" / "pilots"
    paper = load_config("text-md", paper=True)
    for name, model in (("text-md-cuda", load_config("text-md")), ("text-md-paper-cuda", paper)):
        fields = read_toml(pilots / f"{name}.toml")
        assert fields.pop("experiment") == "text-md"
        config = validate_config(load_config("text-md", overrides=fields))
        assert config["device"] == "cuda" and config["seeds"] == 1
        for key in ("dim", "heads", "layers", "max_len", "batch_size"):
            assert config[key] == model[key], key
