"""The claims register (docs/CLAIMS.md): every claim of the seed papers that concerns something
runnable, in our words, with the experiment and claim id that test it, the protocol differences,
and the verdict the published `summary.json` under a results root gives it; and the claims we
cannot test here, with the reason.

Regenerate with `attnbias claims --out RESULTS_ROOT --write docs/CLAIMS.md`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from ..config import algorithm_named
from ..experiment_registry import experiment_names, load_config
from ..store import ResultsStore, UnsafeStore, config_key, parse_json
from ..theory_measures import ASSUMPTION1_EXAMPLE1, span
from . import forest, papers
from .claims import (
    CHECK_WORDS,
    NOT_SUPPORTED,
    STATUSES,
    SUPPORTED,
    check_stored,
    decoded_summary,
    is_consistency_check,
    measured_parts,
    status_of,
    verdict_columns,
)
from .report import verdict_mark
from .verdicts.real import ABOUT_EQUAL

PAPERS = {
    "MD": "Julistiono, Tarzanagh, Azizan (2024), *Optimizing Attention with Mirror Descent: "
    "Generalized Max-Margin Token Selection*, arXiv:2410.14581",
    "NGD": "Vasudeva, Deora, Thrampoulidis (2024), *Implicit Bias and Fast Convergence Rates for "
    "Self-attention*, arXiv:2402.05738",
    "SVM": "Tarzanagh, Li, Thrampoulidis, Oymak (2023), *Transformers as Support Vector "
    "Machines*, arXiv:2308.16898 (the setting both seed papers build on)",
    "ours": "attnbias's own extension beyond the seeds (docs/theory.md, the atlas)",
}


def selection(experiment: str, arm: str) -> str:
    """How a real-data experiment chooses each arm's learning rate, and the seeds its claims
    compare (from its config: the search's seed is left out)."""
    config = load_config(experiment)
    return (
        f"each {arm}'s learning rate chosen by a search trained from seed "
        f"{config.selection_seed}, which the comparisons then leave out (selection and "
        f"evaluation on different seeds): n = {len(config.evaluation_seeds)} paired seeds of "
        f"{len(config.seed_list)}"
    )


def minilm_protocol() -> str:
    """text-finetune's protocol differences (its selection seeds from its config)."""
    return (
        "pretrained all-MiniLM-L6-v2 (6 layers) instead of bert-base-uncased; Rotten Tomatoes "
        "and 3-class tweets instead of MultiNLI / CivilComments; far fewer steps (sized for 2 "
        "CPU cores); " + selection("text-finetune", "optimiser")
    )


# why torch's Muon stalls in the atlas: read from torch's code and the atlas's runs
MUON_STALL = (
    "the stall's likely cause, the same kind of floor as Adam's ε: torch's Muon divides the "
    "momentum by max(‖m‖_F, ε = 1e-7) before its 5 Newton–Schulz steps (torch/optim/_muon.py), "
    "so once ‖m‖_F is far below ε its step shrinks like ‖m‖_F/ε; in the atlas the runs stall "
    "(‖W_t‖'s slope, printed beside the effect) once the attention is saturated, where "
    "∇_W L falls exponentially in ‖W‖, and the float64 method in "
    "Muon's order with no floor keeps moving (reexamine-muon/muon-long-stalls, at tuned η); the "
    "gradient's norm is not recorded, so the cause is inferred, not measured: "
    "reexamine-muon/muon-like-spectraldescent judges Muon at its own tuned η"
)
# the NGD paper's fine-tuning figures: the seed text lost them and §5.2, keeping App. C's settings
FIGS_1_4 = (
    "our paraphrase of the published NGD paper's figures; the seed text lost §5.2 and the "
    "figures and keeps only their App. C settings"
)
FIGS_1_4_READ = (
    "the statement is our reading of Figs. 1 and 4 (SGD, SNGD, SPS and Adam fine-tuning "
    "bert-base-uncased on MultiNLI and CivilComments, App. C), not a quote"
)
# text-finetune's and vision's statements: one row each, its data sets the parts
PER_DATASET = (
    "one claim for the statement, each data set a part, Holm over them (a statement refuted "
    "on one data set is refuted; counted once, not once per data set)"
)
FASTER_MEANS = (
    "'faster' = a lower final train loss (the minibatch loss averaged over the last 10 % of "
    "the steps) after the same 200 steps at batch size 16, not a time to a level; the rates "
    "tried and chosen, and whether any sits at its grid's edge, are printed with the claim "
    "(`attnbias reproduce text-finetune`, the summary) and in RESULTS.md's text-finetune table "
    "('rates tried (chosen)'); a rate at its grid's edge makes the claim inconclusive"
)
# The MD paper's real-data findings hold for models trained to 99.5 % train accuracy; text-md's
# runs stop at an equal budget short of that, so its rows are ours, citing the paper (issue 29).
EQUAL_BUDGET = (
    "the MD paper's comparison at an equal budget of 30 epochs, short of the paper's premise "
    "(training to 99.5 % train accuracy): not the paper's claim, which `attnbias reproduce "
    "text-md --paper --device cuda` decides; "
)
# the confound of an equal budget far from separation (issue 29)
UNDER_TRAINED = (
    "confound: the runs end the budget far from separating their training data and unequally "
    "trained (each part prints its arms' train accuracy), so a lower test accuracy can follow "
    "from less training rather than worse generalization: a refutation (at full scale ℓ3-MD "
    "ends less trained than ℓ2-MD) says that arm is behind at this budget, not that it "
    "generalizes worse at equal fit"
)
# text-md's protocol differences, without its selection seeds (`text_md_protocol`)
TEXT_MD_SETTING = (
    "Rotten Tomatoes snippets instead of IMDb reviews; a smaller model (text-md.toml: width 64, "
    "2 blocks, length 48; the paper's 384/1536, 3 blocks, length 512: `attnbias reproduce "
    "text-md --paper --device cuda`); the paper's premise is not met: its claims are about "
    "models trained to 99.5 % train accuracy (its stopping rule), these rows judge models "
    "after an equal budget of 30 epochs, far from separating their training data (each "
    "accuracy part prints the train accuracy its arms reached; RESULTS.md's text-md table "
    "every p's), so a verdict here is about the equal budget, not the paper's claim at "
    "separation; the paper's protocol (to 99.5 % train accuracy, or 1,000 epochs) is sized "
    "for a GPU, not two cores in a session, and `attnbias reproduce text-md --paper --device "
    "cuda` would decide the paper's claims; the same accuracy comparison at 15 epochs shown "
    "beside it; "
    "2-class cross-entropy (mean) = the paper's sigmoid + BCE, its summed-loss learning rates "
    "× batch size; test accuracy at the checkpoint chosen on a validation split carved from "
    "the training snippets by movie (the paper reports the best test accuracy); the paper: 10 "
    "data orders from one initialisation; "
)


def text_md_protocol() -> str:
    """text-md's protocol differences (its selection seeds from its config)."""
    return TEXT_MD_SETTING + selection("text-md", "p")


def vit_protocol() -> str:
    """vision's protocol differences (its selection seeds from its config)."""
    return (
        "ViT on MNIST (5,000) and Fashion-MNIST instead of MNIST and CIFAR-10; fewer steps; "
        + selection("vision", "optimiser")
    )


NOT_RUN_WORDS = "not run yet at full scale on the current code"
# Why an experiment has no full-scale summary, where that is known (docs/REAL_DATA.md)
NOT_RUN_WHY = {
    "text-md": "its full run takes about 1 h 16 min with --workers 2 on 2 cores: docs/REAL_DATA.md",
    "text-finetune": "its full run takes about 95 min in one process (docs/REAL_DATA.md) and was "
    "not rerun on this code",
}


@dataclass(frozen=True)
class PaperClaim:
    """id: the claim id an experiment gives it ("experiment/slug"); claims made per data set
    carry the data set after the slug ("…/norm-growth-mnist") and are all listed."""

    id: str
    paper: str
    where: str
    wording: str
    differences: str = ""
    consistency: bool = False  # a consistency check of the code: listed and counted apart
    # where the statement was read when the seed texts do not hold it (papers.READ_MD, …)
    read_in: str = ""
    # its quotes ('…' in wording and where; [brackets] are our insertions) are verbatim in the
    # seed texts: tests/test_register_quotes.py checks each against them
    verbatim: bool = True
    # the id of a later row that tests the same claim with a design that decides it (the same
    # arm run longer): where that row has a verdict, this one is listed apart, not counted
    superseded_by: str = ""
    # (claim id, row id): that claim of this entry reads the same runs as that row at another
    # point of them (not independent evidence): listed with the repeats, not counted
    rereads: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        if not self.verbatim and not self.read_in:
            raise ValueError(f"{self.id}: a quote not in the seed texts needs read_in, its source")

    @property
    def experiment(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def cited(self) -> str:
        """The "paper, where" cell: the paper, where in it, and where that was read if not in
        the seed texts."""
        return f"{self.paper}, {where_read(self.where, self.read_in)}"


def where_read(where: str, read_in: str) -> str:
    """Where in a paper, and where that was read when the seed texts do not hold it."""
    return f"{where} ({read_in})" if read_in else where


@dataclass(frozen=True)
class Untested:
    paper: str
    where: str
    wording: str
    reason: str
    read_in: str = ""  # as PaperClaim's


def beyond_theorem(data: str, footnote: bool = False) -> str:
    """The protocol difference of a row citing a theorem proved under Assumption 1, on data
    that does not satisfy it on any seed (its token Gram dominance δ > 1: each row's
    assumption1_holds reads "0 of N seeds"); with `footnote`, the same for δ measured without
    the pairs of optimal tokens, the condition of the paper's footnote for antipodal optimal
    tokens, which fails too."""
    if footnote:
        return (
            f"tests beyond the theorem: {data} at this size satisfies neither Assumption 1 "
            "(token Gram dominance δ > 1 on every seed, our reading, counting the ±μ optimal "
            "tokens' pairs, which give δ ≥ n − 1 = 3 by construction) nor the paper's footnote "
            "for antipodal optimal tokens with the other tokens nearly orthogonal (δ without "
            "the optimal tokens' pairs > 1 on every seed too: at d = 64 the other tokens are "
            "not nearly orthogonal); both δ per seed in the summary"
        )
    return (
        f"tests beyond the theorem: {data} at this size does not satisfy Assumption 1 (token "
        "Gram dominance δ > 1 on every seed, our reading; δ per seed in the summary)"
    )


def tuned_protocol(steps: str, tuned: str = "each algorithm's step (η; Polyak's 1/c, its cap "
                   "kept)", grown: str = "twice", seeds: int = 10,
                   judged: str = "the evaluation seeds") -> str:  # fmt: skip
    """The protocol of the speed rows compared at tuned steps (tuning_sweep.py,
    verdicts/tuning.py; ngd-joint, ngd-fixed, antipodal, reexamine-polyak); `steps`: each tuned
    algorithm's config step; `tuned`: which steps are tuned; `grown`: how often the grid may
    grow (the config's rate_extensions, in words); `seeds`: the evaluation seeds; `judged`:
    the seeds the speeds are timed on."""
    return (
        f"speed at tuned steps (issue 29): {tuned} "
        f"chosen for each metric from ¼, ½, 1, 2, 4 × its config's ({steps}), the grid grown "
        f"past an edge a best step sits at, at most {grown}, by the area under that metric's log "
        "curve (its log averaged over the log-spaced recorded steps, mean over seeds; a diverged "
        "run worst) on 5 selection seeds (1001–1005) disjoint from the "
        f"{seeds} evaluation seeds; the chosen steps are in each part's quantity (all scores: "
        "the summary's tuned_steps); level "
        "per pair and metric: the one the slower of the two reaches at half the budget on the "
        f"selection seeds; speed = steps to it on {judged}, paired by seed, Holm over "
        "the parts; a best step at the grid's edge leaves inconclusive the verdict a better step "
        "could overturn"
    )


# ngd-fixed's and antipodal's rate_extensions: the misalignment's best steps (NGD η = 12.8,
# Polyak 1/c = 8 or 16) are bracketed from six growths on; twice left NGD's at the edge
FIXED_GROWN = "eight times"


def rate_compared(seeds: int) -> str:
    """ngd-beats-gd's rule, read as Thm 1 states the rates, on `seeds` evaluation seeds."""
    return (
        "'significantly faster' read as the paper's theory states it, a rate (Thm 1: NGD's "
        "misalignment falls like a power of t; GD's, at every fixed η, like a power of 1/log t, "
        "whose exponent in t tends to 0): per seed, the log–log slope in t of 1 − cos(W_t, W_mm) "
        "over the last decade of steps (200–2,000; values above 1e-13), GD's minus NGD's at the "
        "same factor of each one's config step, at every step factor of the grid both were tuned "
        "over (each part names its η's), > 0 (ours: any steeper power of t), Holm over the step "
        "sizes, n = seeds; no step is chosen, so no edge of the grid decides it: GD's exponent "
        "flattens as its η grows, as a power of 1/log(ηt) does, and toward the grid's small end "
        "both runs are earlier in their transient (the mean per η: the summary's "
        f"mean_exponent_by_step); every η runs on the {seeds} evaluation seeds. Supporting "
        "evidence, not judged: steps to the loss, misalignment and score levels at tuned steps ("
    )


# the paper's Fig. 2 and Fig. 5 capped every adaptive step; the runs here do not
CAPPED = (
    "the paper's figure capped NGD's and NGD-mom's adaptive steps and Polyak's ('We use a cap "
    "on the adaptive step-size', App.) at values lost in extraction"
)
TUNED_AS_EVIDENCE = (
    "); GD's best step sits at the largest tried and on separable data GD has no best step, "
    "so those ratios are in the summary (steps_to_level_at_tuned_steps) with their reasons"
)


# ngd-fixed's polyak-faster (and reexamine-polyak's rows): a second confirmation, sized by the
# first's power calculation
SECOND_CONFIRMATION = (
    "300 fresh confirmation seeds (2101–2400; a first confirmation on 100 seeds, 2001–2100, was "
    "inconclusive, one part refuting alone and not at its Holm level: that look is run again "
    "with the row and judged alone, its verdict in the verdict's brackets and its parts, with "
    "the power calculation that sized this one, in the summary's earlier_looks; this second "
    "one is judged alone and declared the last: pooling the two at the unadjusted level would "
    "be optional stopping, and no group-sequential boundaries were planned. The row has had "
    "four looks in all, each of which could have refuted it (the evaluation seeds at 10 and at "
    "100, the two confirmations): a Bonferroni bound of 4 × 2.5 % on a false refutation, not "
    "the legend's 2.5 %)"
)
# the same seeds, for reexamine-polyak's rows: their first look at them
POLYAK_SEEDS = (
    "300 fresh confirmation seeds 2101–2400, ngd-fixed's second confirmation seeds (redesigned "
    "with c tuned, these rows were first judged on its first, 2001–2100, run again with them: "
    "each row's earlier looks are in its verdict's brackets and the summary's earlier_looks; "
    "they moved with ngd-fixed so that the uncapped row stays its repeat. The looks that could "
    "have decided a row bound its false verdicts: three here (the evaluation seeds and the two "
    "confirmations), 3 × 2.5 %, not the legend's 2.5 %)"
)


# where the NGD paper's global convergence is tested under its Assumption 1
GLOBAL_ROW = "local-global/global-example1"


def warm_up_cost(experiment: str) -> str:
    """What momentum's warm-up from a zero buffer alone costs NGD-mom against NGD at its
    effective step η/(1 − β), at the run's last step T (from the config): it moves some
    β/(1 − β) steps late, which under a misalignment falling like t⁻² is a factor
    ((T − lag)/T)²."""
    config = load_config(experiment)
    mom = algorithm_named(config, config.momentum)
    lag = mom.momentum / (1.0 - mom.momentum)
    factor = ((config.steps - lag) / config.steps) ** 2
    return (
        f"NGD-mom moves like NGD at η/(1 − β) some β/(1 − β) = {lag:.3g} steps late, under a "
        f"misalignment falling like t⁻² a factor ((T − {lag:.3g})/T)² = {factor:.3g} at the "
        f"last step T = {config.steps:,}, our estimate"
    )


def ngd_fixed_entries(
    experiment: str, figure: str, data: str, beyond: str, seeds: int, confirmation: str
) -> list[PaperClaim]:
    """ngd-fixed and antipodal test the same statements of the NGD paper on two data sets;
    `beyond`: why the rows citing Theorem 1 or its lemmas test beyond it; `seeds`: the
    config's evaluation seeds; `confirmation`: the fresh seeds polyak-faster is judged on."""
    tuned = tuned_protocol("GD η = 1, NGD η = 0.1, Polyak c = 1", grown=FIXED_GROWN, seeds=seeds)
    confirmed = tuned_protocol("GD η = 1, NGD η = 0.1, Polyak c = 1", grown=FIXED_GROWN,
                               seeds=seeds, judged="the confirmation seeds")  # fmt: skip
    setting = (
        f"{data}; logistic loss, {seeds} evaluation seeds, 2,000 steps, η = 1 (GD) and 0.1 "
        "(NGD), Polyak uncapped (γ_b = ∞, its step (L − L*)/(c‖∇L‖²) taken in the log domain) "
        "with L* of the optimal tokens (our constants: the paper's were lost in extraction)"
    )
    return [
        PaperClaim(f"{experiment}/global-convergence", "ours", f"beyond NGD Thm 1, {figure}",
                   "NGD → W_mm of the globally optimal tokens from small random starts, beyond "
                   "Thm 1's assumptions (the data fail Assumption 1 at this size: an extension "
                   "of ours, not a claim of the paper, which proves global convergence only "
                   f"under its assumptions and is judged on them at {GLOBAL_ROW})",
                   setting + "; tested only from small random initialisations (W₀ ~ N(0, "
                   "0.1²)), not from any initialisation: global convergence (adversarial "
                   f"starts, on example1 where Assumption 1 holds) is {GLOBAL_ROW}'s, larger "
                   "starts local-global/global-example1-every-R's; alignment 0.99 as "
                   "'converged' is ours, required of every seed (a claim about every start: one "
                   f"seed ending below it refutes it, however good the mean); {beyond}"),
        PaperClaim(f"{experiment}/ngd-beats-gd", "NGD", f"§3 (Q3), {figure}",
                   "'NGD is significantly faster than standard GD' (§3); 'adaptive step-size "
                   "rules can accelerate the convergence of self-attention' (abstract)",
                   setting + "; " + rate_compared(seeds) + tuned + TUNED_AS_EVIDENCE + "; the "
                   f"rate compared is Thm 1's, of NGD uncapped as Thm 1 analyses it ({CAPPED}), "
                   f"{beyond}"),
        PaperClaim(f"{experiment}/polyak-faster", "ours",
                   f"reading of NGD §3 (Extension to Polyak), {figure}",
                   "Polyak, uncapped, is faster than NGD, uncapped, on every metric: our "
                   "reading at γ_b = ∞ of the paper's Polyak statement, which the paper made of "
                   "its implementation with capped adaptive steps at values lost in extraction "
                   "(the statement and its cap are listed among the claims not tested here)",
                   setting + "; judged by steps to the "
                   "misalignment level at every power of ten from where both start (their "
                   "value at the second recorded step; the first until referee read 13, "
                   "whose top level both methods met at step 2) down to its half-budget "
                   "level, each a part (its profile: a method "
                   "ahead early and behind late is not 'faster'; one level of our choosing "
                   f"could decide either way), Holm over the parts, on {confirmation} with "
                   "each method's steps and the levels chosen on the selection seeds: the grid's "
                   "growth (twice → eight times), and on ngd-fixed the seeds (10 → 100), were "
                   "changed after a look at the evaluation seeds (NGD's best step at the grid's "
                   "edge, then a part straddling 1), so the verdict is the confirmation's and "
                   "the evaluation seeds' profile is in the summary "
                   "(earlier_looks); L − L* and the other tokens' mass (the loss and "
                   "the optimal-token score in forms float64 does not round to their floor) "
                   "are not applicable: at the steps chosen for them both methods take them "
                   "below float64's range within half the budget (level 0), and neither has a "
                   "best step for them (NGD's fall faster the larger its step, Polyak's reach "
                   "float64's floor at its largest steps), so the train loss the paper's "
                   "sentence names is untested here; Polyak uncapped (γ_b = ∞: the limit of "
                   "Eq. 3's capped rule, the "
                   "one Thm 7 analyses; the paper's figure used a cap whose value was lost in "
                   "extraction), so no cap binds (at our former γ_b = 1e6 it bound early in the "
                   "run, and late Polyak was GD with step γ_b; reexamine-polyak sweeps finite "
                   "caps, and ngd-rates/polyak-cap-slows stores the step a 1e6 cap binds from, "
                   "the paper's practice); "
                   + confirmed),
        PaperClaim(f"{experiment}/norm-growth", "NGD", f"proof of Thm 1 (Eq. 12), {figure}",
                   "‖W_t‖ grows linearly in t under NGD (GD: logarithmically)",
                   setting + "; log–log slope of ‖W_t‖ over the last 90 % of steps above 0.8 "
                   "(ours), the part that can fail; that it stays below 1.2 is the triangle "
                   f"inequality's (norm-growth-bound, a consistency check); {beyond}"),
        PaperClaim(f"{experiment}/norm-growth-bound", "NGD", f"Eq. 12, {figure}",
                   "‖W_t‖ grows at most like ηt", setting + "; a consistency check: "
                   "normalised steps of length η give ‖W_t‖ ≤ ‖W₀‖ + ηt on any data (the "
                   "triangle inequality), so the log–log slope exceeds 1 only where ‖W_t‖ first "
                   "lagged far behind ηt; 1.2 ours", consistency=True),
        PaperClaim(f"{experiment}/momentum-improves", "ours",
                   f"reading of NGD §3 (momentum), {figure}",
                   "NGD-mom, uncapped, is faster than NGD, uncapped, on every metric: our "
                   "reading without caps of the paper's momentum sentence, which it made of "
                   "runs with capped adaptive steps at values lost in extraction (the sentence "
                   "is listed among the claims not tested here)",
                   setting + "; NGD and NGD-mom uncapped, as polyak-faster's methods; times "
                   "to a level are whole steps where the grid records every step (two runs "
                   "crossing between the same two steps tie; interpolating between them, as "
                   "before issue 29's referee read 12, made a top level that both methods pass "
                   "by step 2 look ordered and refuted the row alone), and a straddling part "
                   "whose pairs mostly tie says so; momentum β = 0.9 (ours); a method that "
                   "beats another is "
                   "judged with the other tuned as fairly, so each method's one step knob is "
                   "tuned alike (NGD's η, NGD-mom's η at its β as set) and the boost is "
                   "judged as polyak-faster's speed is (steps to L − L*, to the other tokens' "
                   "mass and to each misalignment level of the profile (from where both "
                   "are at the second recorded step: until referee read 13 the first, whose "
                   "top level, 0.1, both met at step 2 in 295 of 300 pairs, a tie no seeds "
                   "decide, which alone left the row inconclusive), Holm over the parts; "
                   "L − L* and the mass are not applicable where both methods take them below "
                   "float64's range, as there), on the confirmation seeds polyak-faster is "
                   "judged on: the evaluation seeds had been read for the equal-η comparison "
                   "and for NGD's speed, so their verdict, judged alone, is evidence beside it "
                   "(earlier_looks, with ngd-fixed's first confirmation seeds) (a referee's "
                   "request: "
                   "the paper's comparison at equal nominal η gives momentum an effective step "
                   "η/(1 − β) 10× NGD's, and a misalignment falling like 1/(ηt)² gains "
                   "(1/(1 − β))² = 100 from that alone; that comparison, final and run-mean "
                   "misalignment, is kept as evidence: the summary's at_equal_nominal_step); "
                   f"{experiment}/momentum-beyond-effective-step asks the same at the config's "
                   "steps"),
        PaperClaim(f"{experiment}/momentum-beyond-effective-step", "ours", f"beside §3, {figure}",
                   "momentum's boost is its own, not that of its larger effective step "
                   "η/(1 − β) (the paper credits momentum; it does not compare at equal "
                   "effective step)",
                   setting + "; NGD-mom's final misalignment against that of NGD run at "
                   "η/(1 − β) = 1 itself on the evaluation seeds (equal effective step), per "
                   "seed; a stricter reading of ours than the boost at tuned steps "
                   f"({experiment}/momentum-improves, ours too); not supported reads: no boost "
                   "beyond the effective step (momentum's warm-up from a zero buffer alone "
                   f"costs it: {warm_up_cost(experiment)}; a ratio further below that, as the "
                   "effect may show, says momentum costs more than its warm-up there)"),
        PaperClaim(f"{experiment}/score-saturation", "NGD", f"Lemma 1, {figure}",
                   "'quantifying the rate of sparsification in the attention map' (abstract): "
                   "1 − s_opt decays exponentially in ‖W_t‖",
                   setting + "; the rate's constant is ours (derived: −1/‖W_mm‖, "
                   "docs/theory.md), measured per seed over the steps after the first 10 %; "
                   f"{LEMMA1_FOLLOWS}; {beyond}", consistency=True),
    ]  # fmt: skip


MD_DATA = "gaussian_unit n=6, T=8, d=10, seeds 1–100, W₀ ~ N(0,1), logistic loss"
# md-local's and md-plain's runs are read as the MD paper's figure is, not against its theorem
MD_FIGURE_READING = (
    "the figure's protocol, not the main theorem's premises: each run is measured against the "
    "ℓp-AttSVM of the tokens it selects at the end, and whether those are locally optimal and "
    "W₀ starts in their cone is not checked, so the rows test beyond the (local) theorem "
    "(referee read 13)"
)
MD_LOCAL = (
    f"the paper's setting ({MD_DATA}, normalized MD η = 0.1; the figure's runs 1,500 / 2,000 / "
    "20,000 steps for p = 1.75 / 2 / 3); a row on a run's own SVM (own-p-diagonal, zero-init) "
    "is judged on runs of every p for 20,000 steps on seeds 1–20 (and from zero), each run's "
    "divergence from its own ℓp-AttSVM over that SVM's divergence from the nearest other p's, "
    "both solved in the run, against ¼ (referee read 14: the fixed 0.05 used before lay above "
    "4 of the 6 divergences between neighbouring p's SVMs, so a run at another p's SVM passed "
    "it; at 1,500 and 2,000 steps the ℓ1.75 and ℓ2 runs had not settled: their ratio still "
    "fell tens of times a decade); " + MD_FIGURE_READING
)
MD_JOINT = (
    "one toy problem of our own, n=2, T=3, d=3 (the paper's hand-made sequences were lost in "
    "extraction), W₀ and v₀ ~ N(0, 0.01²) (small and random, 10 seeds: n = 10 seeds, each its "
    "own start on the one toy, so each verdict holds for this one d = 3 problem and says nothing "
    "of how often it holds across problems or dimensions), normalized MD η = 0.1, 20,000 steps; "
    "W's and v's thresholds derived in the run: ¼ of the ℓp SVM's divergence D_ψ from the "
    "nearest other p's (its value in the row's threshold source), so that a run at another p's "
    "SVM fails it, and a level every run is below already after the first step is "
    "inconclusive, named (from zero the d = 2 toy's v met its level at step 1); the theorem's "
    "conditions on the data: the seed texts hold only the MD paper's abstract, which names "
    "them without stating them, so their list is not reproduced here and the toy is checked "
    "only for what the conclusion needs: the optimal tokens are separable by the head and both "
    "lie on the margin of every ℓp head-SVM (y_i v_mmᵀx_i,opt = 1 for both samples; d = 3 lets "
    "the three head-SVMs differ with both on it: v_mm ∝ (0.353, 0.841, −0.131), "
    "(0.404, 0.797, −0.206), (0.506, 0.706, −0.355) for p = 1.75, 2, 3), every other token's "
    "label score y_i v_mmᵀx_it lies below the optimal tokens' (1, the margin): "
    "0.873, 0.296 and −0.558, −0.407 (ℓ1.75), 0.816, 0.3 and −0.517, −0.399 (ℓ2), 0.701, 0.308 "
    "and −0.433, −0.384 (ℓ3), and the ℓp Att-SVM of the optimal tokens is feasible for each p "
    "(tests/test_referee_rewords.py recomputes these); a pilot d = 2 variant (not stored) with "
    "one optimal token off the head's margin left W's divergence from its Att-SVM flat, which "
    "is why this toy puts both on it: the problem was built where the conclusion can hold, so "
    "its support says the conclusion holds there, not how often; any further condition of the "
    "theorem is unchecked, so the rows test its conclusion on one problem, not the theorem "
    "under its premises"
)
NGD_JOINT = (
    "dm data model (n=8, d=64, T=2; our constants), W₀ and v₀ ~ N(0, 0.01²) (small and random: "
    "from zero W's first step is already W_mm's direction), 10 seeds, 2,000 steps; NGD = "
    "the loss-normalised step η/L of Eq. 13 without its time-dependent factor (as the paper's "
    "Fig. 3); Polyak uncapped (γ_b = ∞, its step taken in the log domain), L* = 0; thresholds "
    "(alignment 0.95, loss 1e-3) ours"
)
# ngd-joint's design beside Thm 3's premises
BEYOND_THM3 = (
    "tests beyond Thm 3: small random initialisation (the theorem starts from zero; the paper "
    "says its results extend to small random ones), the logistic loss (§4 analyses the "
    "exponential one) and steps without Eq. 13's time-dependent factor; Thm 3's conditions "
    "on the data (token norms, overparameterisation: constants lost in extraction) are not "
    "checked on dm (referee read 13)"
)
# what ngd-joint/loss-to-zero's rule can show of the paper's "fast"
LOSS_TO_ZERO = (
    "the rule tests convergence, not speed: every algorithm's final loss is below 10⁻³; the "
    "paper's 'fast' is a rate whose formula was lost in extraction, not tested here (speed "
    "against GD is ngd-joint/all-beat-gd's)"
)
# what the small random start leaves of ngd-joint/v-aligns' levels
V_MET_EARLY = (
    "from the small random start GD's and Polyak's v is within 0.05 of v_mm's direction by "
    "step 2, so their level parts are not applicable ('below 0.05 already at step 2') and only "
    "the further 10× fall from step 2 to the end tests them; NGD's and joint-NGD's v are above "
    "0.05 at step 2 and their level parts test convergence"
)
# ngd-joint's speed rows and Polyak's cap (verdicts.ngd.unless_cap_binds)
JOINT_CAP = (
    "Polyak uncapped (γ_b = ∞: the limit of Eq. 3's capped rule; the paper's Fig. 3 used a cap "
    "whose value was lost in extraction), so no cap binds (at our former γ_b = 1e6 it bound "
    "within the first steps: late Polyak was GD with step γ_b)"
)
JOINT_LOSS_IN_RATE = (
    "the loss against GD in rate, not at tuned steps (GD's best loss step sat at the top of its "
    "grid however far it grew: on separable data GD has no best step): every algorithm also "
    "runs at every step factor of the grid, and at each factor GD's late log–log slope in t of "
    "the loss minus the other's (steps ≥ 0.1 × the last step the run's loss moved; values "
    "float64 rounds to 0 left out) is judged per seed, Holm over the factors, as "
    "ngd-fixed/ngd-beats-gd does for the misalignment. A run whose loss falls to float64's "
    "floor within that window has its slope set by the floor (the window ends where the loss "
    "stops moving, near 1e-308): its size says only that the loss reached the floor there, and "
    "the verdict rests on the sign, GD's loss still falling like a small power of t (a "
    "referee's reading)"
)
# how the joint rows' Polyak steps and how a level met at the first record is timed (read 14)
JOINT_POLYAK = (
    "Polyak's step is one η_t for (W, v) together, from the norm of their joint gradient "
    "‖(∇_W L, ∇_v L)‖ (joint-NGD normalises each tensor by its own), so early, while v's "
    "gradient dominates that norm, W moves little: the W parts compare that rule, not Polyak "
    "steps per tensor (the paper's joint Polyak step is not specified in the seed text); a "
    "level an algorithm meets at the first recorded step (step 2) is timed there, its true "
    "time being at most 2"
)
NGD_JOINT_TUNED = (
    NGD_JOINT
    + "; "
    + tuned_protocol("GD η = 0.5, NGD and joint-NGD η = 0.1, Polyak c = 1")
    + "; judged on 100 fresh confirmation seeds (2001–2100), each algorithm at every step it "
    "ran at on the evaluation seeds (n counts them): on the 10 evaluation seeds, looked at "
    "first, all-beat-gd's GD-over-Polyak part straddled 1 and about 84 paired seeds would "
    "have decided it (referee read 13); that look's verdict is kept beside the row "
    "(earlier_looks), and two looks could have decided it: a Bonferroni bound of 2 × 2.5 % "
    "on a false verdict, not the legend's 2.5 %"
)
KQ = (
    "example1 data (n=4, T=4, d=16), 20 seeds, NGD (η = 0.1) for 2,000 steps instead of GD to "
    "infinity; W₀ = K₀Q₀ᵀ small and random for both parameterisations"
)


def local_path(config) -> str:
    """How far local-gaussian's NGD runs can move against how deep their starts sit, and how
    its design grew, from local-global's config (referee read 12)."""
    (lr,) = {a.lr for a in config.algorithms if a.optimizer == "ngd"}
    path = lr * config.gaussian_steps
    top = max(config.local_radii)
    return (
        f"a start at R·W_mm(α′) has every logit gap ≥ R (margin 1 at W_mm); NGD moves W by "
        f"exactly ηT = {path:g} in Frobenius norm over its {config.gaussian_steps:,} steps, "
        f"which with unit tokens changes a gap by at most 2ηT = {2 * path:g}: at R = {top:g} "
        "the whole run is of the start's own size, so ending at α′ there may measure little "
        "more than not leaving it; the radii above 16 and more seeds were added after looks "
        "at shares below the level, so the support is from a design grown until a radius "
        "passed: a direction test (misalignment with W_mm(α′) still falling, over a run with "
        "ηT far beyond R·‖W_mm(α′)‖) on fresh seeds would decide it"
    )


def local_direction(config) -> str:
    """local-gaussian-direction's protocol, from local-global's config."""
    (lr,) = {a.lr for a in config.algorithms if a.optimizer == "ngd"}
    first, last = config.direction_seeds
    radii = "; ".join(
        f"{a.name} {', '.join(f'{R:g}' for R in rs)}"
        for a, rs in zip(config.algorithms, config.direction_radii)
    )
    return (
        f"fresh seeds {first}–{last} (none of the sweep's), every locally optimal start of "
        f"gaussian_unit (up to {config.gaussian_choices} a seed) at each algorithm's radii "
        f"({radii}): first the smallest radius at which the sweep on seeds 1–{config.seeds} "
        f"put that algorithm's share above {config.level:g} (local-gaussian), chosen before "
        "these runs; ℓ3-MD's further radii, the sweep's next and its largest, were added "
        "after looks (its starts at the first left α′; its share at the second straddled the "
        "level, below it at its estimate), so each algorithm is judged at some R, Holm over "
        "the radii tried, after three looks (R = 16, then 64, then 256): a false support is "
        "at most 3 × 2.5 % = 7.5 % (Bonferroni over the looks), not the legend's 2.5 %; a "
        "share below the level at every R tried is inconclusive, not a "
        "refutation: 'for R large enough' gives no R₀, and a share below the level at R says "
        f"R₀ lies above R, or the claim fails; {config.direction_steps:,} steps (NGD moves W "
        f"by ηT = {lr * config.direction_steps:,g} in Frobenius norm), at a radius above an "
        "algorithm's first its step scaled by (R / first)^(p−1); every run should travel "
        f"{config.direction_travel:g}× its start in its mirror map's space, "
        "(‖W_T‖_p / ‖W_0‖_p)^(p−1), the Frobenius ratio for NGD, so that the run, not its "
        "start, sets its final direction; a run short of it leaves its part inconclusive "
        "only where counting it as passing or as failing changes the part's verdict (the "
        "policy for runs timed at a budget; added after the first look at these runs, where "
        "one short ℓ3-MD run had left the whole row inconclusive: the part's evidence "
        "short_of_travel names such runs); ℓ3-MD's dual iterate ‖W‖₃² grows by at most η a "
        "step, which puts R = 256 at its config η out of reach; a start passes when it ends "
        "selecting α′ and its divergence from W_mm(α′) (D_ψ of the normalised iterates in "
        "the algorithm's own norm) at the last step is below its value at the last recorded "
        "step at or before a tenth of the run: still closing on W_mm(α′) over the last "
        "decade; a start that leaves α′ or settles elsewhere fails; the starts lie on the "
        "cone's axis, not elsewhere in the cone"
    )


def kq_window(config) -> str:
    """kq-converges-nuclear's fit window and why, from kq-nuclear's config."""
    return (
        f"judged by its misalignment with the nuclear SVM still falling like a power of t over "
        f"the second half of the run, steps {config.steps // 2:,}–{config.steps:,} (log–log "
        "slope below −0.1, ours): late enough that a run heading for another limit has levelled "
        "off there — the control, the direct W's misalignment with the nuclear SVM, and this "
        "slope fitted from earlier starts, are printed beside the effect — and after the "
        "transient from the small start, in which every misalignment falls whatever the limit"
    )


# kq-nuclear goes beyond what the SVM paper proves: our extension, with what was read there
KQ_WHERE = (
    "extension of the SVM paper's result for W = KQᵀ (the nuclear-norm Att-SVM as the "
    "factorised W's limit direction) to normalized GD on (K, Q) from small random K₀, Q₀ for "
    "finite steps"
)
# the precondition on every "gap below 0.05" part (verdicts/atlas.py `not_converged`)
GAP_LEVEL = (
    "a median gap above 0.05 refutes only a gap that has stopped falling: its log–log slope "
    "over the last decade of steps (mean over seeds, 95 % t interval) wholly above −0.1, the "
    "stall criterion; otherwise 'not converged', inconclusive, with the step at which that "
    "slope reaches 0.05"
)
ATLAS = (
    "gaussian_unit (n=6, T=8, d=10), 50 seeds, W₀ ~ N(0, 0.01²), 3,000 steps, constant "
    "normalised steps; margin gap (docs/theory.md#atlas) since ℓ∞ and spectral max-margin "
    "directions need not be unique; threshold 0.05 ours; " + GAP_LEVEL
)

REEXAMINE = "re-examination of a negative result (issue 16)"
MUON_LONG = (
    "; Muon-long = torch's Muon over 3·10⁴ steps (10× the atlas's: at 3,000 steps Muon's gap "
    "was still falling; muon-like-spectraldescent prints the step its slope would reach 0.05 "
    "by, and the horizon leaves a margin beyond it) "
    "at the η chosen for Muon at 3,000 steps on the selection seeds, fixed in the config and "
    "not retuned at 3·10⁴ steps (no η is chosen on the evaluation seeds), judged as run with "
    "the same rule: a gap still falling is 'not converged', a stalled gap above 0.05 refutes"
)
MUON_ATLAS_ETA = (
    "; judged with every arm at its config η, the atlas's η = 0.2 (untuned), where the atlas's "
    "Muon stalled: the setting the explanation is about"
)
MUON = (
    "the atlas's data and W₀ (gaussian_unit n=6, T=8, d=10, W₀ ~ N(0, 0.01²)), 3,000 steps; "
    "every arm at its own η, chosen from η ∈ {0.0125, 0.05, 0.2, 0.8} (grown past an edge "
    "its best sits at, twice at most) by its median final spectral gap on selection seeds "
    "1001–1010, and judged on the evaluation seeds 1–50 (the same grid and seeds for every "
    "arm; the η each arm is judged at in each part's quantity, RESULTS.md's table and the "
    "summary's tuned_steps); a best η still at the grid's edge leaves inconclusive the verdict a "
    "better η could overturn, saying so; Muon-f64 = SpectralDescent by 20 cubic "
    "Newton–Schulz steps in float64 on m ← 0.95 m + g, no ε floor, no Nesterov (torch's Muon: "
    "5 quintic bfloat16 steps, Nesterov, ‖g‖_F floored at 1e-7); Muon-f64-Nesterov = the same "
    "with Nesterov's momentum as torch.optim.SGD(nesterov=True) (torch's Muon's order); "
    "NM-f64 (-Nesterov) = momentum on the direction, NGD-mom's order (m ← 0.95 m + Δ(g), "
    "W ← W − η m); NS-f64 = the same without momentum; 'stalled' = log–log slope of ‖W_t‖ "
    "below 0.1 over the last 90 % of steps (ours); torch's Muon is judged as run "
    "(docs/REFEREE.md): its stall is part of the outcome, printed beside the effect; " + GAP_LEVEL
)
ADAM = (
    "the atlas's data and W₀ (gaussian_unit n=6, T=8, d=10, W₀ ~ N(0, 0.01²)), 20 seeds, "
    "3·10⁵ steps instead of 3,000 (at 10⁵, an earlier look, Adam-decay's median gap straddled "
    "0.05: the horizon was set after that look); Adam as torch.optim.Adam (β = (0.9, 0.95)) "
    "with its moments rescaled by "
    "powers of two (optim.adam: no g² underflows; torch's step bit for bit where nothing does; "
    "with ε = 0 a coordinate whose √v̂ is 0 does not move) at η_t = 0.05·(t + 1)^(−1/2) "
    "(Adam-decay, ε = 1e-300; a = 1/2 ours, in the theory's (0, 1]) and at the atlas's "
    "constant η = 0.05 with ε = 0 (Adam-eps0) and with the atlas's ε = 1e-300 (Adam); SignGD "
    "η = 0.05; gap threshold 0.05 as the atlas's; 'stalled' = ‖W_t‖ log–log slope < 0.1. One "
    "policy (docs/REFEREE.md): each row is judged on the arm that meets the theory's premise "
    "ε → 0: the theorem's row on Adam-decay (its premises met), the constant-rate rows on "
    "Adam-eps0, judged as run, except a stall, which with ε = 0 would be an arithmetic limit of "
    "the rescaled moments, not the setting's outcome: inconclusive, with the reason (config "
    "`stalled`); the ε = 1e-300 arm is run beside them and judged by no row: once |g| ≪ ε its "
    "step is ≈ η·m̂/ε, a gradient step under which ‖W_t‖ grows like log t (it stalls: the "
    "experiment's table), a regime ε → 0 never enters; " + GAP_LEVEL
)


def travelled(experiment: str, arm: str) -> float:
    """Σ η_t over an arm's steps, from its config (`Algorithm.lr_sum`)."""
    config = load_config(experiment)
    return algorithm_named(config, arm).lr_sum(config.steps)


def equal_norm() -> str:
    """reexamine-adam's closer row: its arms travel very different distances in the same
    steps (Σ η_t from the config)."""
    decaying, constant = (travelled("reexamine-adam", arm) for arm in ("Adam-decay", "Adam-eps0"))
    return (
        "compared at equal ‖W_t‖_F, not at equal steps: over the run the decaying arm's steps "
        f"sum to Σηₜ = {decaying:.3g} and the constant one's to {constant:,.0f} (‖W_t‖'s "
        "log–log slopes: the experiment's table), so at the end 'closer' would measure the "
        "step budget; per seed the constant arm's gap is read where its ‖W_t‖_F first reaches "
        "the decaying arm's final one (interpolated linearly in log ‖W_t‖_F between recorded "
        "steps), against the decaying arm's final gap; a seed where it never reaches it is left "
        "out, named; the final gaps of both are printed beside (the comparison at equal steps, "
        "evidence)"
    )


POLYAK = (
    "ngd-fixed's problem (example1 n=4, T=4, d=64, logistic loss, W₀ ~ N(0, 0.1²), 10 "
    "evaluation seeds, 2,000 steps, NGD's config η = 0.1); Polyak with L* of the optimal "
    "tokens, from c = 1 (the paper's rule has no c), at each γ_b ∈ {1e2, 1e4, 1e6 (ngd-fixed's "
    "former cap; the paper's value was lost in extraction), ∞ (uncapped, exact: the step is "
    "taken from the logs of ‖∇L‖ and L − L*)}"
)
# reexamine-polyak's rate_extensions: ngd-fixed's (NGD's best misalignment η bracketed)
POLYAK_GROWN = FIXED_GROWN
# why the rows are judged on fresh seeds
POLYAK_CONFIRMED = (
    f"judged on {POLYAK_SEEDS} (at γ_b = ∞ the row is "
    "ngd-fixed/polyak-faster's runs), each method's steps and levels chosen on the selection "
    "seeds: Polyak's c was swept as set (0.5, 1, 2) until a referee asked for it tuned as "
    "NGD's η is (a Polyak at a c we picked against NGD at its best step says little), "
    "a design changed after a look at the evaluation seeds, whose comparison is kept as "
    "evidence (earlier_looks)"
)
POLYAK_TUNED = "; ".join(
    [
        POLYAK,
        tuned_protocol("NGD η = 0.1, Polyak c = 1", "NGD's η and, at each cap, Polyak's 1/c "
                       "(the cap kept)", POLYAK_GROWN, judged="the confirmation seeds"),
        "judged as ngd-fixed/polyak-faster (the misalignment at every power of ten from where "
        "both start down to its half-budget level, each a part; L − L* and the "
        "other tokens' mass in forms float64 does not round to their floor; a part whose "
        "level is 0, both methods below float64's range within half the budget, is not "
        "applicable, printed with that reason: where L − L* and the mass are not applicable, "
        "the train loss is untested at that cap), without its cap doubt: here the cap is the "
        "setting judged (the paper's practice: Eq. 3's capped rule), so a binding cap is part "
        "of the method; NGD runs uncapped, unlike the paper's figure, which capped NGD's "
        "adaptive step too (at a value lost in extraction), so each row compares capped Polyak "
        "with uncapped NGD"
        ". NGD has no best step for "
        "L − L* and the mass (they fall faster the larger its η, to the grid's last factor): a "
        "larger η would only widen its lead, so a refutation stands and the misalignment parts, "
        "both steps inside their grids, decide the row",
        POLYAK_CONFIRMED,
    ]
)  # fmt: skip
# who ends ahead: each method at its step tuned for the misalignment
POLYAK_ENDS = (
    POLYAK + "; NGD's η and Polyak's 1/c each tuned for the misalignment (chosen as the speed "
    "rows': the area under its log curve on selection seeds 1001–1005, the grid ¼–4× grown "
    f"past an edge at most {POLYAK_GROWN}; a best step at its grid's edge leaves open the "
    "verdict a better step for it could overturn); " + POLYAK_CONFIRMED
)


# Lemma 1's rate is what margin 1 gives once the direction is aligned: what such a row can show
LEMMA1_FOLLOWS = (
    "the slope −1/‖W_mm‖ follows from margin 1 at W_mm once W_t points along W_mm (the support "
    "tokens' logits then trail the optimal one by ‖W_t‖/‖W_mm‖): the row shows the runs are in "
    "that aligned regime over the window, which the alignment rows already show, not a rate "
    "that could differ on aligned runs"
)
LOST = "formula lost in extraction: the theory's value is derived (docs/theory.md#rates-measured)"
BEYOND_THM1 = beyond_theorem("example1")
NO_TIME_FACTOR = (
    "Eq. 13 without its time-dependent factor (lost in extraction; the paper's Fig. 3 omits it "
    "too), which is the mechanism the paper credits for the slower rate: absent from the runs"
)


# joint-rates' start beside what Thms 3 and 1 assume
ZERO_START = (
    "every arm starts from zero (W₀ = 0; the joint arms also v₀ = 0): Thm 3's own start; Thm 1, "
    "the fixed-head rate it is compared with, is proved from a small random W₀ (Lemma 4's "
    "conditions) under Assumption 1, so the fixed-head arm runs outside Thm 1's initialisation "
    "premise and the row compares the two runs as made from zero, not the two theorems' rates"
)


def ngd_rates_setting(config) -> str:
    """ngd-rates' protocol, from its config (`load_config("ngd-rates")`)."""
    return (
        f"example1 n={config.n}, T={config.T}, d={config.d}, {config.seeds} seeds, W₀ ~ "
        f"N(0, {config.init_scale:g}²), {config.loss} loss; exponents fitted per seed over a "
        f"stated window of steps ({span(config.fit_window)} unless the row says otherwise), "
        "mean over seeds; our constants"
    )


def joint_rates_setting(config) -> str:
    """joint-rates' protocol, from its config (`load_config("joint-rates")`)."""
    paper = "" if config.loss == "exponential" else " (the paper's §4: exponential)"
    return (
        f"dm n={config.n}, d={config.d}, zero init, {config.seeds} seeds, η = {config.lr:g}, "
        f"{config.loss} loss{paper}, {config.steps:,} steps; fits over steps "
        f"{span(config.fit_window)}, before Eq. 13's loss underflows float64; our constants"
    )


def local_global_setting(config) -> str:
    """local-global's protocol, from its config (`load_config("local-global")`)."""
    radii = ", ".join(f"{r:g}" for r in config.radii)
    local = " and ".join(f"{r:g}" for r in config.local_radii)
    return (
        f"starts R·W_mm(α′) (R = {radii}; gaussian_unit's locally optimal starts also at "
        f"{local}, for local-gaussian: R₀ is not given) for the neighbours α′ of the optimal "
        f"tokens; example1 n={config.example1_shape[0]}, T={config.example1_shape[1]}, "
        f"d={config.example1_shape[2]} and gaussian_unit n={config.gaussian_shape[0]}, "
        f"T={config.gaussian_shape[1]}, d={config.gaussian_shape[2]}, {config.seeds} seeds (the "
        "example1 rows count those that satisfy Assumption 1, their n; it is checked on "
        f"{config.assumption_seeds:,} problems); Assumption 1 read as a diagonally dominant "
        f"token Gram matrix; fractions against {config.level:g} (ours), the starts of one seed "
        "clustered (cluster bootstrap over seeds; Clopper–Pearson over seeds where every seed "
        "agrees), n = seeds"
    )


# a claim about every start is judged by its failures, not by a share of the starts
EVERY_START = (
    "a claim about every start, so reported as its violations ('k of N starts end elsewhere "
    "(in m of S seeds)'), not as a share against 0.9: one start ending elsewhere, on a seed "
    "where Assumption 1 holds, refutes it; Lemma 4's condition on the initialisation scale "
    "(its constants lost in extraction) is not checked at R = 1 (as trajectory-lemmas); a "
    "start passes when its run ends selecting the optimal tokens, which convergence in "
    "direction to W_mm needs but does not follow from: the direction itself is not measured "
    "here (local-gaussian-direction's test of the divergence still falling would; referee "
    "read 14)"
)
LEMMAS = (
    "every recorded step (40 per run) continued by one step of the run's own optimiser; "
    "each lemma reported as its violations, 'k of N steps (or step and sample pairs) in S "
    "seeds (in m of them) violate it, largest violation x', n = S, the distinct seeds (the "
    "steps and samples of one seed are one run's, not independent), with the smallest margin "
    "by which it held where none does (a "
    "decrease within float64's rounding is none); example1 n=2, T=3, d=48 (fixed head), dm "
    "n=8, d=32 with the exponential loss (joint)"
)
# the premises of the fixed-head lemmas (App. A.2) beside the runs
LEMMAS_FIXED = (
    LEMMAS + "; claimed only on the seeds where Assumption 1 holds (token Gram dominance "
    "δ < 1, per seed in the summary; the other seeds' violations are reported beside, not "
    "judged); Lemma 4's condition on the initialisation scale (its constants lost in "
    "extraction) is not checked"
)
# Lemma 13's premise the joint runs lack
LEMMAS_JOINT = (
    LEMMAS + "; the joint runs take Eq. 13's loss-normalised steps without the "
    "time-dependent factor the lemma's proof uses (lost in extraction; the paper's Fig. 3 "
    "omits it too), and Thm 3's conditions on the data (constants lost in extraction) are "
    "not checked on dm: tests beyond the lemma"
)


def theory_entries() -> list[PaperClaim]:
    """The rates, constants and conditions of the theorems, measured
    (docs/theory.md#rates-measured); their protocols are read from the configs."""
    rates, joint = load_config("ngd-rates"), load_config("joint-rates")
    ngd_rates, joint_rates = ngd_rates_setting(rates), joint_rates_setting(joint)
    LOCAL_GLOBAL = local_global_setting(load_config("local-global"))
    early, late = (span(w) for w in rates.windows)
    n_a, T_a, d_a = ASSUMPTION1_EXAMPLE1
    return [
        PaperClaim("ngd-rates/thm1-rate", "NGD", "Thm 1", "NGD's finite-time rate of "
                   "directional convergence to W_mm from any direction",
                   f"{ngd_rates}; measured only from small random initialisations (W₀ ~ N(0, "
                   "0.1²)), not from any direction; bound: the exponent log t / t itself fits "
                   f"over the window, −0.89 ({LOST}); {BEYOND_THM1}"),
        PaperClaim("ngd-rates/thm1-rate-assumption1", "NGD", "Thm 1", "NGD's finite-time "
                   "rate of directional convergence to W_mm, on data that satisfies the "
                   "theorem's Assumption 1",
                   f"example1 n={n_a}, T={T_a}, d={d_a} (not the other rows' size), NGD η = "
                   f"{rates.lr:g} for {rates.long_steps:,} steps; otherwise {ngd_rates}. "
                   "The theorem's premises: Assumption 1 (our reading: token Gram dominance "
                   "δ < 1) is checked on every seed's problem, and a seed that fails it makes "
                   "the row inconclusive, named (δ per seed in the summary); Assumption 2 (a "
                   "sample's non-optimal tokens share one score, below the optimal one's) holds "
                   "by construction (v scores them 0 and the optimal token 1; "
                   "tests/test_data.py checks it); Lemma 4's bound on the initial scale was "
                   "lost in extraction and is not checked; measured only from small random "
                   "initialisations (W₀ ~ N(0, 0.1²)), not from any direction; bound as "
                   "thm1-rate's"),
        PaperClaim("ngd-rates/asymptotic-exponent", "ours", "beside Thm 1", "NGD's misalignment "
                   "falls like t^-2 (a bounded residual on W_t ∝ t)", ngd_rates),
        PaperClaim("ngd-rates/window-stable", "ours", "method", "the fitted exponent does not "
                   f"depend on the window ({early} vs {late} within {rates.tolerance:.0%})",
                   f"{ngd_rates}; a consistency check of our fitting method (a precondition of "
                   "the rate rows, not a paper's claim): listed apart", consistency=True),
        PaperClaim("ngd-rates/thm7-polyak-rate", "NGD", "Thm 7 (App. A)", "the Polyak step has "
                   "Thm 1's rate", f"{ngd_rates}; uncapped Polyak (γ_b = "
                   f"{max(rates.polyak_caps):g}, exact: its step is taken from the logs of "
                   f"‖∇L‖ and L − L*), fitted over steps {span(rates.polyak_window)}; a run "
                   "that leaves the uncapped pace before the window's end is named and leaves "
                   f"the row inconclusive; {BEYOND_THM1}"),
        PaperClaim("ngd-rates/polyak-cap-slows", "NGD", "§3 'Extension to Polyak step-size'",
                   "with the cap γ_b 'the rates are much faster in the beginning, but slow down "
                   "as training progresses'",
                   f"{ngd_rates}; γ_b = {min(rates.polyak_caps):g}; per seed, 'faster in the "
                   "beginning, but slow down': the capped step's own exponent over the late "
                   f"window {late} smaller than over the early one, steps "
                   f"{span(rates.early_window)}; its early exponent against NGD η = "
                   f"{rates.lr:g}'s is evidence only (NGD untuned: a comparison that would "
                   "need both tuned, a referee's objection), as is the step from which the cap "
                   "binds in each run (‖W_t‖ leaves the uncapped pace: cap_binds_from_step; "
                   "it binds inside the early window, so 'the beginning' straddles the onset "
                   "and the early exponent mixes the uncapped and the capped step); "
                   f"{BEYOND_THM1}"),
        PaperClaim("ngd-rates/eq12-norm-growth", "NGD", "Eq. 12 (Lemma 7)", "‖W_t‖ grows "
                   "linearly in t, like ηt", f"{ngd_rates}; η ∈ "
                   f"{{{', '.join(f'{lr:g}' for lr in rates.lrs)}}}, {rates.short_steps:,} "
                   f"steps, slope over {span(rates.growth_window)}; lower limit 0.9 ours; the "
                   f"(η, seed) cases clustered by seed; {BEYOND_THM1}"),
        PaperClaim("ngd-rates/eq12-upper-bound", "NGD", "Eq. 12 (Lemma 7)", "‖W_t‖ grows at "
                   "most like ηt", f"{ngd_rates}; a consistency check: steps of length η "
                   "satisfy it on any data (the triangle inequality)", consistency=True),
        PaperClaim("ngd-rates/eq12-linear-in-lr", "NGD", "Eq. 12", "the growth rate of ‖W_t‖ is "
                   "set by the step size η", f"{ngd_rates}; ±10 % ours; a consistency check: "
                   "slope 1 follows from κ ≈ η at every η (eq12-norm-growth)", consistency=True),
        PaperClaim("ngd-rates/lemma1-rate", "NGD", "Lemma 1", "the optimal tokens' softmax "
                   "scores saturate exponentially in ‖W_t‖ at the rate the margin sets",
                   f"{ngd_rates}; rate γ* = 1/‖W_mm‖ ({LOST}); ±20 % ours; {LEMMA1_FOLLOWS}; "
                   f"{BEYOND_THM1}", consistency=True),
        PaperClaim("ngd-rates/lemma1-vs-margin", "NGD", "Lemma 1", "the saturation rate is "
                   "proportional to the margin, across problems",
                   f"{ngd_rates}; a consistency check: margins varied by scaling the tokens "
                   "(× 0.5, 1, 2), an exact symmetry L_c(W) = L₁(c²W)", consistency=True),
        PaperClaim("ngd-rates/lemma1-vs-margin-geometry", "NGD", "Lemma 1", "the saturation "
                   "rate is proportional to the margin, across problems",
                   f"{ngd_rates}; margins varied by the data's geometry (n ∈ {{1, 2, 4, 8}} "
                   "samples, margins ≈ 0.4–1.4); per-seed slopes, mean over seeds; ±10 % ours; "
                   "rate ∝ margin follows on each problem from margin 1 at its W_mm once the run "
                   "is aligned (lemma1-rate), so this adds no test beyond alignment; tests "
                   "beyond the theorem: of the sizes only n = 1 satisfies Assumption 1 at "
                   "this d, on every seed, and n = 2, 4, 8 on none (δ grows with n at fixed "
                   "d; tests/test_theory_claims.py checks it on the config's seeds; δ per "
                   "seed of n = 4 in the summary)",
                   consistency=True),
        PaperClaim("joint-rates/thm3-slower", "NGD", "Thm 3 vs Thm 1 (§4)", "under joint "
                   "training 'the convergence to implicit bias is much slower'",
                   f"{joint_rates}; {NO_TIME_FACTOR}; {ZERO_START}; so the row is "
                   "inconclusive, premise not met, as thm3-rate and thm4-v-margin on the same "
                   "runs (one policy, docs/REFEREE.md): the paper's claim is a consequence of "
                   "Thm 3, whose slowdown it credits to that factor, and a slowdown measured "
                   "without it cannot corroborate the paper; the effect shown is the slowdown "
                   "of the loss-normalised step η/L alone, a finding of ours "
                   "(joint-rates/thm3-norm-growth reads it)"),
        PaperClaim("joint-rates/thm3-norm-growth", "ours", "beside §4 (Lemma 12)", "the "
                   "growth of ‖W_t‖ under joint training with the loss-normalised step η/L "
                   "slows down without Eq. 13's time factor, which the runs lack (§4 credits "
                   "the slow-down to that factor)",
                   f"{joint_rates}; slope 0.5 ours; {NO_TIME_FACTOR}; which part of the step "
                   "causes the slow-down is not isolated (no arm differs from it in one knob "
                   "alone; referee read 14)"),
        PaperClaim("joint-rates/thm3-rate", "NGD", "Thm 3", "joint training's rate, comparable "
                   "to GD on linear models", f"{joint_rates}; bound: (log log t / log t)², the "
                   "square of Soudry et al.'s distance rate (1 − cos is half a squared "
                   f"distance), its own exponent of log t over {span(joint.fit_window)}, −0.63 "
                   f"({LOST}); {NO_TIME_FACTOR}; a premise of Thm 3, so the row is inconclusive "
                   "(docs/REFEREE.md, precondition policy), its effect shown"),
        PaperClaim("joint-rates/thm4-v-margin", "NGD", "Thm 4", "v's margin is asymptotically a "
                   "constant factor of the max margin", f"{joint_rates}; factor 1/2 ours (lost); "
                   "Thm 4 is proved in Thm 3's setting, whose Eq. 13 time factor the runs lack "
                   "(lost in extraction; joint-NGD is not Eq. 13 either): a premise, so the row "
                   "is inconclusive as thm3-rate is (docs/REFEREE.md, precondition policy), its "
                   "effect shown"),
        PaperClaim("md-plain/own-p-nearest", "MD", "main theorem", "plain ℓp-AttGD converges "
                   "to the ℓp-AttSVM of its own p", f"{MD_DATA} (md-local's problems); plain "
                   "steps η = 1, 10⁵ steps (ours); the limit is judged only where the own "
                   "divergence is below 0.05: at each p's fitted rate that takes from a few "
                   "times to over a hundred times the run's 10⁵ steps (each part's reason names "
                   f"its step), the longest beyond this machine's session; {MD_FIGURE_READING}",
                   read_in=papers.READ_MD),
        PaperClaim("md-plain/polylog-rate", "MD", "abstract", "'a rate comparable to that "
                   "of traditional GD in simpler models' (poly-logarithmic)",
                   f"plain ℓp-AttGD on {MD_DATA} (md-local's problems), η = 1, 10⁵ steps; "
                   f"{MD_FIGURE_READING}; bound ours, derived from the abstract's 'a rate "
                   "comparable to that of traditional GD in simpler models', GD on linear "
                   "models being the simpler model (the rate theorem was not read: its formula "
                   "is not in the seed texts): (log log t / log t)², the square of Soudry et "
                   "al.'s distance rate for GD (D_ψ is locally half a squared distance), its own "
                   "exponent of log t over 10³–10⁵, −1.09; whether each p's exponent depends "
                   "on the window is md-plain/polylog-window-stable's question (a consistency "
                   "check, listed apart, its verdict printed there): a late exponent steeper "
                   "than the early one strengthens a verdict of 'at least GD's rate', a flatter "
                   "one would weaken it"),
        PaperClaim("md-plain/polylog-window-stable", "ours", "method", "the poly-log exponent "
                   "does not depend on the window (within 20 %)", "as md-plain/polylog-rate; a "
                   "consistency check of our fitting method (a precondition of the rate rows, "
                   "not a paper's claim): listed apart, as ngd-rates/window-stable",
                   consistency=True),
        PaperClaim("local-global/assumption1-example1", "NGD", "Ass. 1, Example 1, Lemma 8",
                   "Example 1 satisfies Assumption 1 (nearly orthogonal tokens) w.h.p. for d "
                   "large",
                   LOCAL_GLOBAL + "; judged at each example1 size [n, T] of the register's runs "
                   f"(n={n_a}, T={T_a} here; n=4, T=4 for ngd-fixed, antipodal, ngd-rates and "
                   "kq-nuclear) at d = 1024, the largest of a d sweep 16–1024 ('d large' ours, "
                   f"read after d = {d_a} had been judged alone, a size chosen where it holds: a "
                   "referee's objection), Holm over the sizes; the share at every d of the "
                   "sweep is each part's evidence (share_by_d): the register's other rows run "
                   "example1 at sizes of the sweep below the d where the share reaches the "
                   "level, which is why they test beyond the theorem; a consistency check of "
                   "our generator, not evidence for the paper (δ falls like 1/√d for any "
                   "isotropic Gaussian tokens, so at a d large enough the share cannot fail: "
                   "a referee's reading), listed apart as assumption1-gaussian is",
                   consistency=True),
        PaperClaim("local-global/assumption1-gaussian", "ours", "Ass. 1", "gaussian_unit "
                   "(d = 10) does not satisfy Assumption 1", LOCAL_GLOBAL + "; a consistency "
                   "check: a fact about our own data generator (a precondition of the "
                   "gaussian_unit rows), not a paper's claim: listed apart", consistency=True),
        PaperClaim("local-global/global-example1", "NGD", "Thm 1 (global)", "'convergence is "
                   "provably global': from any initial direction", LOCAL_GLOBAL + "; tested from "
                   "one start per neighbouring token selection α′, R·W_mm(α′) at R = 1 (the "
                   "directions of the SVMs it could end at instead), not from every direction; "
                   + EVERY_START),
        PaperClaim("local-global/global-example1-every-R", "ours", "beyond Thm 1", "global "
                   "convergence on example1 from large starts and for ℓ3-MD too",
                   LOCAL_GLOBAL + "; " + EVERY_START + "; its part NGD at R = 1 is "
                   "global-example1's one part, the rest are beyond it"),
        PaperClaim("local-global/local-gaussian", "MD", "main theorem (local); SVM paper",
                   "convergence to the SVM of locally optimal tokens from a cone around it, "
                   "for R large enough: tested from the cone's axis, at some R",
                   LOCAL_GLOBAL + "; the starts lie exactly on the cone's axis R·W_mm(α′), not "
                   "elsewhere in the cone (no start is perturbed inside it), and 'R large "
                   "enough' is judged as 'at some R of the sweep' (Holm over the radii): the "
                   "row shows convergence from the axis at some R, not from the whole cone; "
                   + local_path(load_config("local-global")) + "; superseded by "
                   "local-gaussian-direction, that test, whose design this sweep chose",
                   read_in=f"{papers.READ_MD}; {papers.READ_SVM}",
                   superseded_by="local-global/local-gaussian-direction"),
        PaperClaim("local-global/local-gaussian-direction", "MD", "main theorem (local); SVM "
                   "paper", "convergence to the SVM of locally optimal tokens from a cone "
                   "around it, for R large enough: tested from the cone's axis by "
                   "direction, at some R of each algorithm's radii (ℓ3-MD's grown after "
                   "looks)",
                   LOCAL_GLOBAL + "; " + local_direction(load_config("local-global")),
                   read_in=f"{papers.READ_MD}; {papers.READ_SVM}"),
        PaperClaim("local-global/not-global-gaussian", "ours", "beside the MD paper's main "
                   "theorem (a local convergence result) and the NGD paper's Thm 1 (global "
                   "under Ass. 1)", "without Assumption 1 convergence need not be global: on "
                   "gaussian_unit, runs from some starts end at tokens other than the optimal "
                   "ones (our statement; the MD paper proves convergence from a cone around a "
                   "locally optimal SVM and does not state that it fails globally)",
                   LOCAL_GLOBAL + "; the row shows that starts exist from which the runs end "
                   "at a non-global direction, judged as an existence count stated before the "
                   "data ('k of N starts end elsewhere (in m of S seeds)': supported when at "
                   "least one start in at least one seed does, over the adversarial starts "
                   "R·W_mm(α′) above; the share ending elsewhere, with its 95 % interval over "
                   "seeds, is evidence beside it), not that convergence is never global nor how "
                   "often a random start ends elsewhere. The count is printed per algorithm and "
                   "R, beside example1's at the same R. Starts at R ≥ 1 are at the SVM's own "
                   "scale, not the small initialisation Thm 1 assumes: the row shows "
                   "non-global outcomes from such starts, not a failure of Thm 1's "
                   "small-start global convergence, which would need starts at R ≪ 1 "
                   "(referee read 14)",
                   read_in=papers.READ_MD),
        PaperClaim("trajectory-lemmas/lemma5", "NGD", "App. A.2, Lemma 5 (a key lemma of Thm "
                   "1's proof; its statement was lost in extraction: read from its proof's "
                   "Scenarios 1 and 2)", "when a sample violates one of its W-SVM constraints, "
                   "the next step does not lower its optimal-token score (our reading)",
                   LEMMAS_FIXED),
        PaperClaim("trajectory-lemmas/lemma6", "NGD", "App. A.2, Lemma 6 (cited in Thm 1's "
                   "proof, §3)", "the negative gradient correlates positively with W_mm at "
                   "every step: ⟨−∇L(W_t), W_mm⟩ > 0", LEMMAS_FIXED),
        PaperClaim("trajectory-lemmas/lemma13-gap", "NGD", "App. B.2, Lemma 13 (i); §1's "
                   "property (i) of the joint analysis", "joint training: 'a growing token "
                   "score gap' between the optimal and the other token, for every sample at "
                   "every step", LEMMAS_JOINT),
        PaperClaim("trajectory-lemmas/lemma13-score", "NGD", "App. B.2, Lemma 13 (ii); §1's "
                   "property (ii)", "joint training: 'non-decreasing softmax scores of the "
                   "optimal tokens with time', for every sample at every step", LEMMAS_JOINT),
    ]  # fmt: skip


def reexamination_entries() -> list[PaperClaim]:
    """The three negative results re-examined (issue 16 point 6): each ends with claims that
    judge the candidate explanations of the earlier verdict, each naming its artefact of our
    setup or saying it is none (`KEY-explains`; for Polyak, `larger-cap-ends-closer`)."""
    muon, adam = "reexamine-muon", "reexamine-adam"
    return [
        PaperClaim(f"{muon}/own-norm-gap", "ours", REEXAMINE, "yardstick: SpectralDescent's "
                   "spectral margin gap goes to near 0 at its tuned η", MUON),
        PaperClaim(f"{muon}/muon-like-spectraldescent", "ours", REEXAMINE, "torch's Muon "
                   "behaves like spectral descent (atlas/muon-like-spectraldescent, at "
                   "Muon's tuned η)", MUON + "; superseded: at 3,000 steps Muon's gap is still "
                   "falling, so the row that decides the claim is "
                   f"{muon}/muon-long-like-spectraldescent (the same arm at the same η over "
                   "3·10⁴ steps)",
                   superseded_by=f"{muon}/muon-long-like-spectraldescent"),
        PaperClaim(f"{muon}/muon-long-like-spectraldescent", "ours", REEXAMINE, "torch's Muon "
                   "as shipped (ε = 1e-7, bfloat16 Newton–Schulz) behaves like spectral descent "
                   "(atlas/muon-like-spectraldescent, at η = 0.0125, chosen for Muon at 3,000 "
                   "steps and fixed, run 10× longer): a verdict on the shipped implementation, "
                   "whose stall's cause is not isolated, not on Muon's update rule",
                   MUON + MUON_LONG + "; at 3,000 steps the same claim was inconclusive (the "
                   "gap still falling), so two looks could have decided it: a false verdict "
                   "is bounded by 2 × 2.5 % = 5 % (Bonferroni)"),
        PaperClaim(f"{muon}/muon-f64-like-spectraldescent", "ours", REEXAMINE, "a float64 "
                   "Muon-style method (Newton–Schulz on momentum, no floor) behaves like "
                   "spectral descent", MUON),
        PaperClaim(f"{muon}/ns-f64-like-spectraldescent", "ours", REEXAMINE, "the same "
                   "without momentum behaves like spectral descent", MUON + "; NS-f64 is "
                   "spectral descent with its polar factor approximated by 20 Newton–Schulz "
                   "steps, and the approximation shows: its tuning scores (the summary's "
                   "tuned_steps) agree with SpectralDescent's at the smaller steps and not at "
                   "the larger ones, the step judged among them, so the row is a finding about "
                   "that method, not a check of our code, and momentum-explains counts it as "
                   "evidence"),
        PaperClaim(f"{muon}/muon-f64-nesterov-like-spectraldescent", "ours", REEXAMINE, "the "
                   "float64 method in torch's Muon's order (Nesterov) behaves like spectral "
                   "descent", MUON),
        PaperClaim(f"{muon}/nm-f64-like-spectraldescent", "ours", REEXAMINE, "the float64 "
                   "method with momentum on the direction (NGD-mom's order) behaves like "
                   "spectral descent", MUON),
        PaperClaim(f"{muon}/muon-stalls", "ours", REEXAMINE, "the suspected artefact, measured: "
                   "torch's Muon stalls where the float64 method in its order keeps moving, "
                   "each at its tuned η (the atlas's η: muon-stalls-at-config-step)", MUON +
                   "; superseded: at its tuned η = 0.0125 Muon has not stalled within 3,000 "
                   f"steps, so the row that decides the claim is {muon}/muon-long-stalls (the "
                   "same arm at the same η over 3·10⁴ steps)",
                   superseded_by=f"{muon}/muon-long-stalls"),
        PaperClaim(f"{muon}/muon-long-stalls", "ours", REEXAMINE, "the suspected artefact, "
                   "measured: torch's Muon, at the η tuned for it at 3,000 steps and run 10× "
                   "longer, stalls where the float64 method in its order keeps moving at the "
                   "same η over the same steps (a stall measured, its cause not isolated: the "
                   "arms differ in precision, Newton–Schulz iteration and floor at once)",
                   MUON + MUON_LONG + "; the float64 method "
                   "(Muon-f64-Nesterov-long: torch's order, Nesterov, float64 Newton–Schulz, no "
                   "floor) at Muon-long's η over its 3·10⁴ steps, untuned as Muon-long is, so "
                   "that both are read at one η and one horizon (a floor-free float64 method "
                   "can freeze too, once its gradient underflows: referee read 11; this arm was "
                   "added after the row had been judged on the same evaluation seeds against "
                   "the 3,000-step arm at its tuned η, a design change after a look: there "
                   "torch's Muon had not stalled and the row was not supported (its verdict is "
                   "listed with the superseded rows); two looks could have supported it, so a "
                   "false support is bounded by 2 × 2.5 % = 5 % (Bonferroni), referee read 14); "
                   "both slopes over the last 90 % of the 3·10⁴ steps"),
        PaperClaim(f"{muon}/muon-stalls-at-config-step", "ours", REEXAMINE, "the suspected "
                   "artefact where the atlas saw it: at the atlas's η, torch's Muon stalls "
                   "where the float64 method in its order keeps moving (a stall measured, its "
                   "cause not isolated: the arms differ in precision, Newton–Schulz iteration "
                   "and floor at once)", MUON + MUON_ATLAS_ETA),
        PaperClaim(f"{muon}/muon-f64-nesterov-like-spectraldescent-at-config-step", "ours",
                   REEXAMINE, "at the atlas's η, the float64 method in torch's Muon's order "
                   "(Nesterov) behaves like spectral descent", MUON + MUON_ATLAS_ETA),
        PaperClaim(f"{muon}/ns-f64-closer-than-each", "ours", REEXAMINE, "momentum slows the "
                   "float64 method: without it, it ends closer to the spectral max-margin "
                   "direction than each momentum variant (both orders, with and without "
                   "Nesterov), each arm at its tuned η", MUON + "; k = 4 variants, a "
                   "refutation at Holm's corrected level"),
        PaperClaim(f"{muon}/torch-muon-explains", "ours", REEXAMINE, "explanation 1 of "
                   "atlas/muon-like-spectraldescent, the artefact: torch's Muon (bfloat16 "
                   "Newton–Schulz, 1e-7 floor), at the atlas's η where its Muon stalled; "
                   "supported = muon-stalls-at-config-step and "
                   "muon-f64-nesterov-like-spectraldescent-at-config-step both supported (Holm "
                   "across their parts)", MUON + MUON_ATLAS_ETA),
        PaperClaim(f"{muon}/momentum-explains", "ours", REEXAMINE, "explanation 2, no artefact: "
                   "Muon's momentum at a constant rate, in either order (gradient then "
                   "orthogonalise, Muon's; orthogonalise then accumulate, NGD-mom's), with or "
                   "without Nesterov, each arm at its tuned η; supported = "
                   "ns-f64-like-spectraldescent and ns-f64-closer-than-each both supported "
                   "(Holm across their parts): without momentum the float64 method behaves like "
                   "spectral descent, and each momentum variant ends farther from it",
                   MUON),
        PaperClaim(f"{adam}/own-norm-gap", "ours", REEXAMINE, "yardstick: SignGD's ℓ∞ margin "
                   "gap goes to near 0 over 3·10⁵ steps", ADAM),
        PaperClaim(f"{adam}/adam-decay-like-signgd", "ours", f"{REEXAMINE}; Zhang, Zou, Cao "
                   "2024 (linear models)", "Adam with a decaying rate (ε → 0) behaves like "
                   "SignGD (ℓ∞ margin)", ADAM + "; two looks on the same seeds (10⁵ steps, "
                   "then 3·10⁵) could have supported it: a Bonferroni bound of 2 × 2.5 % = 5 % "
                   "on a false support, not the legend's 2.5 %"),
        PaperClaim(f"{adam}/adam-eps0-like-signgd", "ours", REEXAMINE, "constant-rate Adam "
                   "with ε = 0 (the theory's ε → 0) behaves like SignGD over 3·10⁵ steps (the "
                   "atlas's constant-rate arm, run 100× longer, without the ε = 1e-300 that "
                   "stalls it), as run", ADAM),
        PaperClaim(f"{adam}/adam-decay-closer-than-adam-eps0", "ours", REEXAMINE, "the "
                   "decaying rate is closer to the ℓ∞ max-margin direction than the constant "
                   "one with ε = 0 at equal ‖W_t‖_F, as run (a stall of the constant arm, with "
                   "no ε regime an arithmetic limit, is no outcome: the comparison is then "
                   "inconclusive)",
                   ADAM + "; " + equal_norm()),
        PaperClaim(f"{adam}/constant-rate-explains", "ours", REEXAMINE, "explanation 1 of "
                   "the atlas's constant-rate Adam verdict, the artefact: the constant learning "
                   "rate; supported = adam-decay-like-signgd and "
                   "adam-decay-closer-than-adam-eps0 (at equal ‖W_t‖_F) both supported",
                   ADAM),
        PaperClaim(f"{adam}/short-run-explains", "ours", REEXAMINE, "explanation 2 of the "
                   "atlas's constant-rate Adam verdict: its 3,000 steps were too few; tested "
                   "only as whether the constant-rate arm run 100× longer (3·10⁵ steps), with "
                   "ε = 0 in place of the atlas's 1e-300 (whose ε regime stalls it, a floor the "
                   "theory's ε → 0 does not have), ends within gap 0.05 of the ℓ∞ max-margin "
                   "direction (supported = adam-eps0-like-signgd supported). A refutation "
                   "would say that running longer alone did not bring it there, not that run "
                   "length plays no part; a stall of the ε = 0 arm (an arithmetic limit) "
                   "decides neither way",
                   ADAM),
        PaperClaim("reexamine-polyak/polyak-faster-cap", "ours", "a reading of NGD §3 "
                   f"(Extension to Polyak), Fig. 2, at caps of our choosing; {REEXAMINE}",
                   "the NGD paper's statement that Polyak steps converge even faster than NGD "
                   "across all metrics, the train loss included (quoted among the claims not "
                   "tested here), read at each cap γ_b we chose (the paper's value was lost in "
                   "extraction: a refutation at one of them says nothing of the paper's cap; "
                   "ngd-fixed's and antipodal's rows read it with both methods uncapped, ours "
                   "too), Polyak's 1/c tuned as NGD's η is; NGD uncapped at every cap (the "
                   "paper capped both methods; a capped NGD is late GD with step γ_b too), so "
                   "a finite cap's row is not the paper's comparison but the cap's effect on "
                   "Polyak alone", POLYAK_TUNED),
        PaperClaim("reexamine-polyak/faster-at-some-cap", "ours", "a reading of NGD §3, Fig. 2",
                   "the same, at one cap γ_b at least: some cap at which every metric holds",
                   POLYAK_TUNED + "; k = the caps, Holm's correction across them (a support at "
                   "its corrected level)"),
        PaperClaim("reexamine-polyak/ngd-ends-ahead", "ours", REEXAMINE, "the earlier "
                   "negative result (ngd-fixed at γ_b = 1e6 and c = 1, both untuned: NGD ended "
                   "ahead): NGD ends with the smaller misalignment, per cap γ_b (∞ included: "
                   "exact, it moves to the end), at the end (paired by seed), each at its step "
                   "tuned for the misalignment; a run float64 froze is compared where it "
                   "stopped: inconclusive (the verdict names the step)",
                   POLYAK_ENDS + "; a run still moves at a recorded step if its ‖W_t‖ changes "
                   "after it; 'the end' is step 2,000: who is ahead depends on the budget. "
                   "At every cap this is polyak-faster's late levels read at the end, on the "
                   "same runs (NGD at its step tuned for the misalignment, Polyak at its 1/c, "
                   "the same confirmation seeds): not independent evidence, so each cap's row "
                   "is listed with the repeats of its polyak-faster row, not counted (referee "
                   "reads 13, uncapped, and 14, the finite caps)",
                   rereads=tuple((f"reexamine-polyak/ngd-ends-ahead-cap-{cap}",
                                  f"reexamine-polyak/polyak-faster-cap-{cap}")
                                 for cap in ("100", "1e4", "1e6", "inf"))),
        PaperClaim("reexamine-polyak/larger-cap-ends-closer", "ours", REEXAMINE, "the "
                   "cap's effect named: the cap γ_b (late Polyak is GD with step γ_b) sets how "
                   "far Polyak gets, so the size of NGD's lead at the end (per cap: "
                   "ngd-ends-ahead-*; uncapped NGD still ends ahead, so the cap sets the lead's "
                   "size, not its sign); supported = each larger cap "
                   "ends closer (c = 1), compared at the end, over the caps 1e2 < 1e4 < 1e6 "
                   "< ∞ (uncapped, exact)",
                   POLYAK + "; at c = 1 on the evaluation seeds (one c for every cap: the cap "
                   "is the knob compared)"),
    ]  # fmt: skip


@cache
def entries() -> tuple[PaperClaim, ...]:
    """The register's entries, built on first use, not at import: their protocols are read
    from the experiments' configs (`load_config`, under `experiment_registry.CONFIG_DIR`)."""
    # read from the configs here, when the register is built, not when it is imported
    TEXT_MD, VIT, MINILM_PROTOCOL = text_md_protocol(), vit_protocol(), minilm_protocol()
    return (
    PaperClaim("md-local/own-p-diagonal", "MD", "main theorem; 3×3 figure",
               "'these algorithms converge in direction to a generalized hard-margin SVM with an "
               "ℓp-norm objective' (abstract)", MD_LOCAL,
               read_in=papers.READ_MD),
    PaperClaim("md-local/own-p-nearest", "MD", "3×3 figure (off-diagonal)",
               "the limit depends on p: each ℓp-MD run ends nearest the SVM of its own p",
               MD_LOCAL + "; per-seed ratios of divergences (runs of each p share data and W₀)",
               read_in=papers.READ_MD),
    PaperClaim("md-local/zero-init", "MD", "figure of Ŵ_t entries from zero init",
               "the convergence holds from zero initialisation too",
               MD_LOCAL + "; n = 1 data set: one zero-initialised run per p on one problem "
               "(md-local.toml's zero_init_seed), as the paper's figure. A run from zero is "
               "deterministic, so there is nothing to resample: the row shows convergence from "
               "zero on this one problem, not how often it holds across problems (own-p-diagonal "
               "does that from random W₀)",
               read_in=papers.READ_MD),
    PaperClaim("md-joint/W-own-p-svm", "MD", "joint-training theorem",
               "'conditions under which this complex joint optimization converges to their "
               "respective hard-margin SVM solutions' (abstract): W → ℓp-AttSVM", MD_JOINT,
               read_in=papers.READ_MD),
    PaperClaim("md-joint/v-own-p-svm", "MD", "joint-training theorem",
               "the head v converges to the ℓp head SVM", MD_JOINT,
               read_in=papers.READ_MD),
    PaperClaim("md-joint/selects-and-classifies", "MD", "joint-training theorem",
               "attention selects the optimal tokens and the head classifies every sample",
               MD_JOINT + "; 0.99 as 'selected / classified' ours",
               read_in=papers.READ_MD),
    *ngd_fixed_entries("ngd-fixed", "Fig. 2", "example1 (n=4, T=4, d=64)",
                       beyond_theorem("example1"), 100, SECOND_CONFIRMATION),
    *ngd_fixed_entries("antipodal", "Fig. 5", "antipodal optimal tokens (n=4, T=4, d=64)",
                       beyond_theorem("the antipodal data", footnote=True), 30,
                       "100 fresh confirmation seeds (2001–2100; three looks in all could have "
                       "refuted it, the evaluation seeds before and after the grid grew and the "
                       "confirmation: a Bonferroni bound of 3 × 2.5 % on a false refutation, not "
                       "the legend's 2.5 %)"),
    PaperClaim("ngd-joint/loss-to-zero", "NGD", "§4 (Thm 3), Fig. 3",
               "the train loss converges under joint training of W and v: the convergence "
               "half of §4's 'fast train loss convergence' (its speed is judged at "
               "ngd-joint/all-beat-gd)",
               f"{NGD_JOINT}; {BEYOND_THM3}; {LOSS_TO_ZERO}"),
    PaperClaim("ngd-joint/v-aligns", "NGD", "§4 (Thm 3), Fig. 3",
               "'the linear decoder converges, in direction, to [u_mm]'",
               f"{NGD_JOINT}; {BEYOND_THM3}; {V_MET_EARLY}"),
    PaperClaim("ngd-joint/W-aligns", "NGD", "§4 (Thm 3), Fig. 3",
               "'GD converges globally, in direction, to [W_mm]' (also under NGD)",
               f"{NGD_JOINT}; {BEYOND_THM3}; 'globally' tested only from small random "
               "initialisations (W₀, v₀ ~ N(0, 0.01²)); judged by W's late increment "
               "W_t − W_{t/2} (t the last step ‖W_t‖ moved: NGD's loss underflows float64 and "
               "‖W_t‖ freezes), not by W_t itself: ‖W_t‖ grows only about 1.01× over GD's "
               "second half, so W_t's misalignment is mostly the part of W₀ no gradient "
               "reaches, which the increment cancels; growing along W_mm beside a bounded "
               "residual, the increment tends to W_mm's direction. As the head's (v-aligns): "
               "its misalignment below 0.05 at the end (not applicable where below it already "
               "at step 2: with T = 2 every gradient lies in the span of the n matrices "
               "(x_{i,1} − x_{i,2}) z_iᵀ that W_mm lies in, and from step 2 on points close to "
               "W_mm's direction there) and falling 10× from step 2; a fall short "
               "of 10× while every run still falls and Thm 3's rate from the half step would "
               "not complete it by the end is inconclusive, naming the step it would (the "
               "slope of W_t's misalignment in ‖W_t‖, the row's former reading, is in the "
               "summary's evidence)"),
    PaperClaim("ngd-joint/all-beat-gd", "NGD", "§4, Fig. 3",
               "'all other algorithms are faster than GD'",
               NGD_JOINT_TUNED + "; on W and v misalignment; " + JOINT_LOSS_IN_RATE + "; "
               + JOINT_CAP + "; " + JOINT_POLYAK),
    PaperClaim("ngd-joint/polyak-fastest", "ours", "reading of NGD §4, Fig. 3",
               "Polyak, uncapped, is the fastest: our reading at γ_b = ∞ of the paper's "
               "Polyak statement, which the paper made of its implementation with a threshold "
               "on Polyak's step (§3) at a value lost in extraction (the statement is listed "
               "among the claims not tested here)",
               NGD_JOINT_TUNED + "; fastest = fewer steps than every other algorithm, on W "
               "and v misalignment, and than NGD and joint-NGD on loss (the loss parts against "
               "NGD and joint-NGD are not applicable where the level both reach is float64's "
               "0, printed so: the loss against them is then untested); against GD on loss: "
               + JOINT_LOSS_IN_RATE + "; " + JOINT_CAP + "; " + JOINT_POLYAK),
    PaperClaim("kq-nuclear/kq-nuclear-svm", "ours", KQ_WHERE,
               "W = KQᵀ trained by normalized GD for finite steps ends closer to the "
               "nuclear-norm Att-SVM than to the Frobenius one", KQ,
               read_in=papers.READ_SVM),
    PaperClaim("kq-nuclear/kq-converges-nuclear", "ours", KQ_WHERE,
               "W = KQᵀ trained by normalized GD heads in direction for the nuclear-norm "
               "Att-SVM: its misalignment with it still falls like a power of t late in the "
               "run (a trend over the run, not the limit reached)",
               f"{KQ}; {kq_window(load_config('kq-nuclear'))}; a level rule (mean alignment "
               "> 0.99) was tried first and straddled in a longer pilot run that was not "
               "stored, which is why the rule is a trend",
               read_in=papers.READ_SVM),
    PaperClaim("kq-nuclear/direct-frobenius-svm", "ours", "extension to finite steps of the "
               "SVM paper's result for W trained directly by GD (the Frobenius Att-SVM as its "
               "limit direction) and of the NGD paper's Thm 1 for NGD (W → W_mm, the Frobenius "
               "Att-SVM, proved under Assumption 1, which example1 at n=4, T=4, d=16 does not "
               "satisfy: token Gram dominance δ > 1 on every seed, our reading)",
               "W trained directly by normalized GD ends closer to the Frobenius Att-SVM than "
               "to the nuclear-norm one", KQ,
               read_in=papers.READ_SVM),
    PaperClaim("atlas/own-norm-gap", "ours", "§atlas (Fan et al. 2025 and Tsilivis et al. 2025 "
               "for linear models)", "steepest descent in a norm maximises the margin in that "
               "norm (the ℓ1.75 part: ℓp mirror descent, not steepest descent in ℓp, and the "
               "MD paper's ℓp margin)", ATLAS),
    PaperClaim("atlas/owner-smallest", "ours", "§atlas", "in each norm the optimiser of that "
               "norm has the smallest margin gap of the steepest-descent optimisers (in ℓ1.75, "
               "ℓ1.75 mirror descent, the MD paper's owner of that norm)", ATLAS),
    PaperClaim("atlas/adam-decay-like-signgd", "ours", "§atlas (Zhang, Zou, Cao 2024 for "
               "linear models)", "Adam (ε → 0) behaves like SignGD (ℓ∞ margin)",
               ATLAS + "; judged on torch's Adam with η_t = 0.05·(t + 1)^(−1/2), the theorem's "
               "decaying rate (ε = 1e-300, β2 = 0.95); the atlas's constant-rate Adam (lr 0.05) "
               "is outside the theorem's premises and gives this row no verdict "
               "(docs/REFEREE.md; it is judged as run in reexamine-adam); superseded: at 3,000 "
               "steps Adam-decay's gap is still falling, so the row that decides the claim is "
               "reexamine-adam/adam-decay-like-signgd (the same arm over 3·10⁵ steps), and this "
               "row is not counted where that one has a verdict",
               superseded_by="reexamine-adam/adam-decay-like-signgd"),
    PaperClaim("atlas/muon-like-spectraldescent", "ours", "§atlas",
               "torch's Muon as shipped (ε = 1e-7, bfloat16 Newton–Schulz, η = 0.2) behaves "
               "like spectral descent", ATLAS + "; " + MUON_STALL + "; torch's Muon as shipped "
               "(bfloat16 Newton–Schulz, ε = 1e-7), judged as run (docs/REFEREE.md): a run whose "
               "‖W_t‖ stops growing ('stalled') is part of the outcome, printed beside the effect "
               "with its final gap; judged at the atlas's one fixed step for every optimiser "
               "(η = 0.2); reexamine-muon/muon-like-spectraldescent judges Muon at its own "
               "step chosen on selection seeds, a different setting, so this row stays counted"),
    PaperClaim("atlas/own-norm-rate", "ours", "§atlas", "the own-norm margin gap falls as a "
               "power of t (linear models: Õ(1/t))", ATLAS + "; slope fitted over the last decade "
               "of steps; −0.25 ours"),
    *reexamination_entries(),
    PaperClaim("text-md/best-accuracy", "ours", EQUAL_BUDGET + "§real data, IMDb table",
               "ℓ1.1-MD reaches a higher best test accuracy than ℓ2-MD (GD), as the MD paper "
               "reports at separation: "
               f"{papers.accuracy_text(1.1)} vs {papers.accuracy_text(2.0)} %",
               TEXT_MD,
               read_in=papers.READ_MD),
    PaperClaim("text-md/md-beats-gd", "ours", EQUAL_BUDGET + "abstract; IMDb table",
               "at an equal 30-epoch budget, every ℓp-MD with p ≠ 2 has a higher test "
               "accuracy than ℓ2 (the MD paper reports that MD improves generalization over "
               f"GD at separation, ℓ3: {papers.accuracy_text(3.0)} %)",
               TEXT_MD + "; " + UNDER_TRAINED, read_in=papers.READ_MD),
    PaperClaim("text-md/keyword-attention", "ours", EQUAL_BUDGET + "§real data, key-word "
               "attention", "ℓ1.1-MD puts more normalised [CLS] attention on the sentence's key "
               "word than GD, as the MD paper reports at separation "
               f"({papers.keyword_text()})", TEXT_MD + "; probe: held-out sentences with "
               "exactly one "
               "VADER-lexicon word instead of hand-written sentences",
               read_in=papers.READ_MD),
    PaperClaim("text-md/sparsity-count", "ours", EQUAL_BUDGET + "§real data, weight "
               "histograms",
               "ℓ1.1-MD gives sparser K, Q, V: fewer entries with |w| > "
               f"{papers.MD_IMDB_THRESHOLD:g} than GD ({papers.counts_text()}); what the count "
               "measures is how many entries moved past the threshold, which reads as sparsity "
               "only where ℓ3-MD, the densest, has more such entries than ℓ2-MD (the negative "
               "control, in each part); the scale-free measures of the next row face the "
               "same control", TEXT_MD + "; the paper's 0.06 mapped to our width: "
               "2.04 × each matrix's initial RMS entry, as 0.06 is to the paper's layers; "
               "where its control fails the count cannot decide the claim however many seeds "
               "run, so the row is listed apart, superseded by text-md/sparsity-scale-free, "
               "whose measures pass theirs",
               read_in=papers.READ_MD, superseded_by="text-md/sparsity-scale-free"),
    PaperClaim("text-md/sparsity-scale-free", "ours", "complement to the MD paper's histograms",
               "ℓ1.1-MD's K, Q, V are sparser than GD's by both measures free of the weights' "
               "overall scale: a larger share of near-zero entries (below 1 % of the RMS "
               "entry) and a larger Hoyer sparsity (√n − ‖w‖₁/‖w‖₂)/(√n − 1) of the trained "
               "matrix; ℓ3-MD must be denser than ℓ2-MD by the same measure (the negative "
               "control, in each part); the two measures are two readings of one claim, so "
               "the six parts (3 matrices × 2 measures) are one family (Holm), and a part "
               "whose interval straddles 0 says how many paired seeds would decide it",
               TEXT_MD),
    PaperClaim("text-finetune/sngd-sps-beat-sgd", "NGD", "Figs. 1 and 4",
               "SNGD and SPS train faster than SGD when fine-tuning a pretrained transformer",
               f"{FIGS_1_4_READ}; {FASTER_MEANS}; {PER_DATASET}; {MINILM_PROTOCOL}",
               read_in=FIGS_1_4, verbatim=False),
    PaperClaim("text-finetune/as-fast-as-adam", "NGD", "Figs. 1 and 4",
               "SNGD and SPS (each) train about as fast as Adam",
               f"{FIGS_1_4_READ}; {FASTER_MEANS}; about as fast (our words for Figs. 1 and 4) = "
               "final train losses within "
               f"a factor {ABOUT_EQUAL:g} of Adam's, either way (ours); {PER_DATASET}; "
               f"{MINILM_PROTOCOL}", read_in=FIGS_1_4, verbatim=False),
    PaperClaim("text-finetune/norm-growth", "ours", "beyond the NGD paper (its App. C reports "
               "norm growth for a ViT trained from scratch, Fig. 7 text; Merrill et al. 2020 for "
               "pre-training)", "every layer's parameter norm grows by at least 1 % within "
               "the 200 fine-tuning steps of a pretrained transformer, for every optimiser "
               "(ℓ1.1-MD included); a growth above round-off but below 1 % does not count",
               f"{PER_DATASET}; {MINILM_PROTOCOL}; no source states this for fine-tuning: the "
               "row is a contrast with vision/norm-growth (a ViT from scratch), and its "
               "classifier head is a new layer, freshly initialised (trained from scratch), so "
               "the head's parts say nothing of the pretrained layers (referee read 14)"),
    PaperClaim("vision/sngd-slower", "NGD", "Figs. 6 and 7",
               "on a ViT, unlike language, SNGD trains slower than SGD",
               f"{VIT}; 'slower' = a higher final train loss after the same steps, paired by "
               f"seed; {PER_DATASET}"),
    PaperClaim("vision/adam-little", "NGD", "Fig. 6", "on a ViT, Adam gains little training "
               "speed over SGD",
               f"{VIT}; 'gains little' = a final train loss no lower than SGD's over "
               f"{ABOUT_EQUAL:g}, one-sided as the paper's 'no significant gain' (an Adam "
               "slower than SGD gains nothing; the factor ours, text-finetune's tolerance for "
               "about as fast; the row was two-sided, either way, until referee read 13); "
               f"{PER_DATASET}"),
    PaperClaim("vision/norm-growth", "ours", "a stricter reading of NGD Fig. 7 text", "every "
               "ViT layer's parameter norm grows by at least 1 %, for the paper's optimisers "
               "(SGD, SNGD, SPS, Adam; not ℓ1.1-MD)",
               f"{VIT}; growth = log(‖θ_T‖/‖θ_0‖) above log 1.01, at least 1 % (ours, as "
               "text-finetune's): against the paper's 0 almost any training passes, since an "
               "update uncorrelated with θ grows ‖θ‖² by about ‖Δ‖² (referee read 12; the row "
               "judged against 0 before, as the paper's). The line's history: 1 % first; then "
               "the paper's 0, after SPS block 1's growth of about 0.7 % had been seen; then "
               "1 % again at referee read 12, with it seen too: the verdict rests on that line "
               "and is fragile. The paper's own statement (growth above 0) is not tested: "
               f"almost any training passes it; {PER_DATASET}"),
    *theory_entries(),
    )  # fmt: skip


def __getattr__(name: str):
    """`REGISTER`: the entries (`entries()`), built when first asked for."""
    if name == "REGISTER":
        return entries()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


UNTESTED = [
    Untested("NGD", "Fig. 1, Fig. 4", "the fine-tuning comparison on MultiNLI and CivilComments "
             "with bert-base-uncased", "neither data set nor BERT-base ships in a package we "
             "can install offline; text-finetune tests the same statements on MiniLM"),
    Untested("NGD", "Fig. 7", "the ViT comparison on CIFAR-10", "CIFAR-10 does not ship in an "
             "installable package here; vision uses MNIST and Fashion-MNIST"),
    Untested("NGD", "App. C, Fig. 7 text", "'we plot the norm growth for various layers of the "
             "ViT and see growth in parameters similar to our observations on synthetic "
             "datasets' (any growth, above 0)", "not tested as stated: from a random start an "
             "update uncorrelated with θ grows ‖θ‖² by about ‖Δ‖², so almost any training "
             "passes it; vision/norm-growth (ours) asks for at least 1 % (referee read 14)"),
    Untested("NGD", "§3 'Extension to Polyak', Fig. 2, Fig. 5", "'Polyak step-size leads to "
             "even faster convergence than NGD across all metrics, including the train loss', "
             "of the paper's implementation, whose adaptive steps are capped ('we use a "
             "hyperparameter as a threshold on the step-size value')", "the caps' values were "
             "lost in extraction; ngd-fixed/polyak-faster and antipodal/polyak-faster judge "
             "both methods uncapped (ours), reexamine-polyak Polyak at finite caps against NGD "
             "uncapped"),
    Untested("NGD", "§3, Fig. 2, Fig. 5", "'NGD with momentum, which results in a performance "
             "boost', of the paper's runs, whose adaptive steps are capped ('We use a cap on the "
             "adaptive step-size, for NGD and NGD-mom')", "the caps' values were lost in "
             "extraction; ngd-fixed/momentum-improves and antipodal/momentum-improves judge "
             "both methods uncapped (ours)"),
    Untested("NGD", "§4, Fig. 3", "'with Polyak step being the fastest', of the paper's "
             "implementation, whose Polyak step is thresholded ('In our implementation, we use "
             "a hyperparameter as a threshold on the step-size value', §3)", "the threshold's "
             "value was lost in extraction; ngd-joint/polyak-fastest judges Polyak uncapped "
             "(ours)"),
    Untested("NGD", "Lemma 13 (iii)", "joint training: the ratio of any two samples' losses is "
             "bounded by a constant", "not testable as stated: the constant is lost from the "
             "text and no finite run refutes a bound whose constant is unknown; the runs also "
             "omit the time-dependent step factor the lemma assumes (lost too). "
             "trajectory-lemmas reports the ratio's growth as a description "
             "(summary: lemma13_loss_ratio); the constant and the factor would make it a test"),
    Untested("MD", "IMDb, 4 and 6 blocks/heads", "the same ordering of ℓp-MD for 4 and 6 "
             "blocks", "a 2-core machine runs one size; on a GPU: attnbias run with layers = heads "
             "= 4 or 6 over the [paper] table of text-md.toml",
             read_in=papers.READ_MD),
]  # fmt: skip


def summaries(root: Path) -> dict[str, dict]:
    """The published summary.json of every experiment under root that has one: read from its
    current publication (through no link the store did not make) and only if its bytes match
    the publication's manifest and it has a summary's shape; ValueError naming the file and
    what to do otherwise (an edited verdict is never printed as computed)."""
    found = {}
    for name in experiment_names():
        store = ResultsStore(Path(root) / name)
        path = store.directory / "summary.json"
        again = f"`attnbias reproduce {name} --out {root}` makes it again from the stored runs"
        try:
            data = store.current_file("summary.json")
            if data is None:
                continue
            summary = decoded_summary(parse_json(data, "its JSON"))  # bounded: size, nesting
            if not isinstance(summary, dict) or not isinstance(summary.get("claims"), list):
                raise ValueError("not a JSON object with a list of claims")
            for i, claim in enumerate(summary["claims"]):
                check_stored(claim, f"claims[{i}]")  # statuses the library makes, types it prints
            # what the register reads of it, read once here: a wrong shape is this file's fault
            register_rows({name: summary})
            unregistered({name: summary})
        except UnsafeStore as err:
            raise ValueError(f"{path} is not the published summary ({err}); {again}") from err
        except (ValueError, TypeError, KeyError, AttributeError, IndexError) as err:
            why = f"{type(err).__name__}: {err}"[:200]
            raise ValueError(f"{path} is not a summary attnbias writes ({why}); {again}") from err
        found[name] = summary
    return found


def matching(entry: PaperClaim, summary: dict | None) -> list[dict]:
    """The summary's claim with the entry's id; failing that, those with that id and a data set
    after it (real data: "text-finetune/norm-growth-rotten_tomatoes"). Exact first, so that
    "x/global" does not also take "x/global-every-R", a claim of its own."""
    claims = (summary or {}).get("claims", [])
    exact = [c for c in claims if c.get("id") == entry.id]
    return exact or [c for c in claims if c.get("id", "").startswith(entry.id + "-")]


QUICK = " (quick scale: not evidence)"


@dataclass(frozen=True)
class Row:
    """One register row: its cells as printed, and what they were printed from — the verdict
    (a status, or NOT_RUN_WORDS) and whether the claim is a consistency check of the code. Counts
    are taken from these, never by reading the printed cells back."""

    cells: tuple[str, ...]
    verdict: str
    consistency: bool = False
    experiment: str = ""  # the experiment whose claim it is (`attnbias claims --experiment`)
    same_as: str = ""  # the id of an earlier row with the same evidence: this row is not counted
    superseded_by: str = ""  # the id of the row that decides this claim: not counted either
    paper: str = ""  # the paper the row cites (PaperClaim.paper): "ours" for our own readings
    fragile: bool = False  # its verdict changes at ½× or 2× its thresholds (the sensitivity)


def verdict(claim: dict, summary: dict) -> str:
    """The verdict cell: the verdict's words (**not supported** in bold), its reasons in
    brackets, and the quick-scale note."""
    return verdict_mark(claim) + (QUICK if "scale" in summary else "")


def cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def answered(found: dict[str, dict]) -> list[tuple[PaperClaim, dict | None, dict | None]]:
    """The register's rows as (entry, its experiment's summary, the summary's claim that
    answers it): one per matching claim, or one with claim None where none does (not run)."""
    rows = []
    for entry in entries():
        summary = found.get(entry.experiment)
        hits = matching(entry, summary)
        rows += [(entry, summary, claim) for claim in hits] or [(entry, summary, None)]
    return rows


def evidence_key(claim: dict) -> tuple | None:
    """What identifies a claim's evidence: its verdict and the set of its measured parts, each
    part's estimate, interval, n and unit, judged by the same comparison and threshold to the
    same verdict. Two rows with the same key, or one whose parts are all among another's, at
    least one interval of positive width among them, report the same runs (such numbers do not
    agree by chance); None for a claim without such an interval (exact values, counts of
    violations: equal numbers there can be chance)."""
    leaves = measured_parts(claim)
    effects = [leaf.get("effect") or {} for leaf in leaves]
    spread = [e for e in effects if isinstance(e.get("low"), float) and
              isinstance(e.get("high"), float) and e["high"] > e["low"]]  # fmt: skip
    if not spread:
        return None
    parts = Counter(
        (e.get("estimate"), e.get("low"), e.get("high"), e.get("n"), e.get("unit"),
         leaf["rule"].get("comparison"), leaf["rule"].get("threshold"), status_of(leaf))
        for leaf, e in zip(leaves, effects)
    )  # fmt: skip
    return status_of(claim), tuple(sorted(parts.items(), key=repr))


def repeat_targets(keyed: list[tuple[str, tuple | None]]) -> dict[str, str]:
    """Row id → the id(s) of the row(s) whose evidence it repeats (`evidence_key`s, in register
    order), one result counted once, where it is reported in full: the first row with the same
    key; else, for a summary row (an 'explains' or 'at some setting' row, all of whose parts
    are the parts of rows that lie wholly within it), those rows, each counted; else the row
    with the most parts among those that hold every part of its own, before it or after it."""
    first: dict[tuple, str] = {}
    for row_id, key in keyed:
        if key is not None:
            first.setdefault(key, row_id)
    target = {i: first[k] for i, k in keyed if k is not None and first[k] != i}
    counted = [(i, Counter(dict(k[1]))) for i, k in keyed if k is not None and i not in target]
    summaries = {}
    for row_id, parts in counted:
        inside = [i for i, other in counted if i != row_id and other < parts]
        covered = sum((other for i, other in counted if i in inside), Counter())
        if inside and parts <= covered:
            summaries[row_id] = ", ".join(inside)
    target.update(summaries)
    for row_id, parts in counted:
        holders = [(sum(other.values()), i) for i, other in counted
                   if i not in summaries and parts < other]  # fmt: skip
        if row_id not in summaries and holders:
            target[row_id] = max(holders)[1]
    return {i: target.get(t, t) for i, t in target.items()}


def register_rows(found: dict[str, dict]) -> list[Row]:
    """One row per (register entry, matching claim of a summary): id, paper and where, the
    paper's statement, our rule, its threshold's source, the effect with its 95 % CI and n, the
    verdict, its sensitivity and the protocol differences. A row whose evidence an earlier row
    reports, or whose parts are all among another row's (`repeat_targets`), names that row in
    `same_as` and is not counted; nor is a row superseded by another that has a verdict
    (`PaperClaim.superseded_by`), which it names in `superseded_by`."""
    rows, keyed, rereads = [], [], {}
    answered_ids = {c["id"] for *_, c in answered(found) if c is not None}
    for entry, summary, claim in answered(found):
        head = [entry.id, entry.cited, entry.wording]
        if claim is None:
            why = NOT_RUN_WHY.get(entry.experiment)
            status = NOT_RUN_WORDS + (f" ({why})" if why else "")
            rows.append(Row(tuple(cell(c) for c in [*head, "", "", "", status, "",
                                                    entry.differences]), NOT_RUN_WORDS,
                            entry.consistency, entry.experiment, paper=entry.paper))  # fmt: skip
            continue
        columns = verdict_columns(claim)
        cells = [claim["id"], *head[1:], columns["rule"], columns["source"],
                 columns["effect"], verdict(claim, summary), columns["sensitivity"],
                 entry.differences]  # fmt: skip
        superseded_by = entry.superseded_by if entry.superseded_by in answered_ids else ""
        rereads.update((i, t) for i, t in entry.rereads if t in answered_ids)
        keyed.append((claim["id"], evidence_key(claim) if not superseded_by else None))
        fragile = bool((claim.get("sensitivity") or {}).get("fragile"))
        rows.append(Row(tuple(cell(c) for c in cells), status_of(claim),
                        is_consistency_check(claim), entry.experiment, "",
                        superseded_by, entry.paper, fragile))  # fmt: skip
    found_as = {**rereads, **repeat_targets(keyed)}
    same_as = {i: found_as.get(t, t) for i, t in found_as.items()}  # a repeat's counted row
    return [replace(row, same_as=same_as.get(row.cells[0], "")) for row in rows]


def repeated(found: dict[str, dict]) -> dict[str, str]:
    """The claims of the summaries `found` that repeat an earlier register row's evidence:
    claim id → the id of that row (`register_rows`' `same_as`)."""
    return {row.cells[0]: row.same_as for row in register_rows(found) if row.same_as}


def superseded(found: dict[str, dict]) -> dict[str, str]:
    """The claims of the summaries `found` that a row with a verdict supersedes: claim id → the
    id of that row (`register_rows`' `superseded_by`)."""
    return {row.cells[0]: row.superseded_by for row in register_rows(found) if row.superseded_by}


REPEATS_READING = (
    "These rows report the same runs and numbers (every part's estimate, interval and n) as "
    "the row they point to, or some of its parts, or (declared in the row) read the same runs "
    "at another point of them: one piece of evidence is counted once, in that row."
)


SUPERSEDED_READING = (
    "These rows test a claim that a later row tests with a design that decides it (the same "
    "arm run longer, say): their verdict is shown in their own experiment's results, and the "
    "claim is counted once, in the row they point to."
)


def repeats_table(rows: list[Row]) -> list[str]:
    """The rows that repeat an earlier row's evidence, or that a later row supersedes, each
    pointing to that row (Markdown lines)."""
    return [
        "| id | paper, where | the paper says | effect [95 % CI], n | verdict |",
        "|" + " --- |" * 5,
        *(f"| {r.cells[0]} | {r.cells[1]} | {r.cells[2]} | {r.cells[5]} | "
          + (f"{r.cells[6]}; superseded by {r.superseded_by} |" if r.superseded_by
             else f"see {r.same_as} |")
          for r in rows),
    ]  # fmt: skip


TABLE_HEADER = (
    "| id | paper, where | the paper says | our rule | threshold from | effect [95 % CI], n "
    "| verdict | sensitivity | protocol differences |",
    "|" + " --- |" * 9,
)


def markdown_table(rows: list[Row]) -> list[str]:
    """The register's table of these rows (Markdown lines, header first)."""
    return [*TABLE_HEADER, *("| " + " | ".join(row.cells) + " |" for row in rows)]


def by_source(rows: list[Row]) -> list[str]:
    """The counted rows' verdicts split by whose claim they judge: the papers' own statements
    (rows citing NGD, MD or SVM) and ours (a stricter reading, a proxy at our budget, an
    extension, an explanation): a refutation of ours says nothing about the papers."""
    papers_rows = [row for row in rows if row.paper != "ours"]
    ours = [row for row in rows if row.paper == "ours"]
    if not papers_rows or not ours:
        return []
    cited = ", ".join(sorted(PAPERS.keys() - {"ours"}))
    return [
        f"Of these, the papers' own claims (rows citing {cited}): {counts(papers_rows)}; "
        "our readings and extensions (rows marked 'ours': a stricter reading, a proxy at "
        "our budget, an extension or an explanation; their verdicts say nothing about the "
        f"papers' claims): {counts(ours)}.",
        "",
    ]


def fragile_decided(rows: list[Row]) -> list[str]:
    """The decided verdicts among the counted rows that rest on the threshold: ½× or 2× of it
    (the sensitivity column) would change them. Counted as decided (the rule was stated before
    the data), and said apart: such a verdict holds at the stated threshold only."""
    decided = [row for row in rows if row.verdict in (SUPPORTED, NOT_SUPPORTED) and row.fragile]
    if not decided:
        return []
    names = ", ".join(row.cells[0] for row in decided)
    return [
        f"Of the decided verdicts, {len(decided)} rest on the threshold (fragile: at ½× or 2× "
        f"of it the verdict changes): {counts(decided)} ({names}); each holds at the threshold "
        "its rule stated before the data and changes at ½× or 2× of it, as its sensitivity "
        "column shows; where the threshold is ours, a reading of the paper's words with another "
        "tolerance could decide otherwise.",
        "",
    ]


def counts(rows: list[Row]) -> str:
    """How many of the rows have each verdict (a check's in its own words)."""
    if any(row.consistency for row in rows):
        words = [CHECK_WORDS.get(row.verdict, row.verdict) for row in rows]
        order = [*(CHECK_WORDS[s] for s in STATUSES), NOT_RUN_WORDS]
    else:
        words = [row.verdict for row in rows]
        order = [*STATUSES, NOT_RUN_WORDS]
    return ", ".join(f"{words.count(s)} {s}" for s in order if words.count(s))


QUOTES = (
    "Quotes ('…') are verbatim from the seed texts the project started from, which hold the NGD "
    "paper and the MD paper's abstract (checked by tests/test_register_quotes.py); [brackets] in "
    "a quote mark a symbol those texts lost, filled in by us. A row citing what they do not hold "
    "(the MD paper's body, the SVM paper) says in brackets where it was read."
)


READING = (
    "**How to read a verdict.** Each claim states its rule before the data: the quantity, the "
    "comparison, the threshold, and where the threshold comes from (the paper's words or "
    "number, or ours with the reason). The runs give the quantity's estimate with a 95 % "
    "confidence interval over seeds (Student t for means and mean log ratios, bootstrap for "
    "medians, Clopper–Pearson for proportions; paired by seed where runs share data and "
    "initialisation; exact for a single deterministic run) and n. *supported*: the whole "
    "interval is on the claim's side of the threshold; *not supported*: the whole interval is "
    "on the other side; *inconclusive*: the interval straddles the threshold, or a "
    "precondition failed (runs stalled, hit a step cap, missed a protocol target — named in "
    "brackets, part by part); *not applicable*: nothing to compare. A claim with several parts "
    "(every p, every metric) holds when every part does: it is supported when every part's "
    "95 % interval is on the claim's side, and refuted with Holm's correction for its k parts "
    "(the most clearly refuted part at 1 − 0.05/k confidence, the next at 1 − 0.05/(k − 1), "
    "and so on until one is not refuted), so a true claim is refuted by chance with "
    "probability at most 2.5 % (a row judged after several looks at the data states its own "
    "bound), not k × 2.5 %; a part refuted at 95 % alone but not at its "
    "Holm level is inconclusive and says so. A claim that holds at *some* setting is the "
    "mirror image: refuted when every setting is, supported with Holm's correction on the "
    "settings. Round brackets after a verdict give its reasons; square brackets, where a "
    "claim's parts point both ways (one part's estimate on the claim's side, another's against "
    "it, whatever their intervals: two measures of one property, or a method ahead early and "
    "behind late), name the parts against it (for a claim at *some* setting: the settings "
    "where it fails). *Sensitivity* "
    "recomputes the verdict at ½× and 2× every threshold: *fragile* means it changes there, "
    "so the verdict rests on our choice of threshold."
)


CHECKS_READING = (
    "These rows test the code, not a paper: each rule holds on any data (an identity, an "
    "inequality every step satisfies, a symmetry of the problem), so no data could make it fail "
    "while the code is right. A row here *passes* or *fails*; it is never a verdict on a "
    "paper's claim and is not counted among the verdicts above."
)


def unregistered(found: dict[str, dict]) -> list[str]:
    """Claim ids in the summaries that no register entry covers (a register to update)."""
    return [
        c.get("id") or c["claim"]
        for summary in found.values()
        for c in summary.get("claims", [])
        if not any(c in matching(e, summary) for e in entries())
    ]


CLAIMS_FOREST = "claims_forest"  # the register's forest plot: figures/claims_forest.png beside it


def write_claims(root: str | Path, path: str | Path, command: str) -> Path:
    """Write the register, with the verdicts of the summaries under root, to path, and its
    forest plot (judging/forest.py) to figures/claims_forest.png beside it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    found = summaries(Path(root))
    drawn = forest.draw(
        forest_claims(found), path.parent / "figures", CLAIMS_FOREST, formats=("png",)
    )
    figure = f"figures/{CLAIMS_FOREST}.png" if drawn else None
    path.write_text(register_markdown(found, command, figure))
    return path


def forest_claims(found: dict[str, dict]) -> dict[str, list[dict]]:
    """The claims of the summaries `found`, by experiment, each marked with the paper its
    register entry cites ("paper"), so that the forest plot groups by experiment and paper."""
    out = {}
    for name, summary in found.items():
        papers = {c.get("id"): entry.paper for entry in entries() for c in matching(entry, summary)}
        out[name] = [{**c, "paper": papers.get(c.get("id"), "")} for c in summary.get("claims", [])]
    return out


def default_config_keys(name: str) -> set[str]:
    """The config keys of the configs `attnbias reproduce NAME` runs by default: full and
    quick scale, and the paper's where the experiment has one."""
    keys = {
        config_key(load_config(name).to_dict()),
        config_key(load_config(name, quick=True).to_dict()),
    }
    try:
        keys.add(config_key(load_config(name, paper=True).to_dict()))
    except ValueError:  # no [paper] table
        pass
    return keys


def other_configs(found: dict[str, dict]) -> list[str]:
    """The experiments whose summary was made from a config other than the current default's
    (`default_config_keys`): an older config, or the user's changes. Their rows are what that
    config gave, not what `attnbias reproduce` gives now."""
    return [
        name for name, s in found.items() if s.get("config_hash") not in default_config_keys(name)
    ]


def other_configs_line(others: list[str]) -> list[str]:
    """A line under the counts naming the experiments whose rows come from another config
    (`other_configs`)."""
    if not others:
        return []
    return [
        f"Not from the current default config: the rows of {', '.join(others)} (their summaries "
        "were made from another config, an earlier default or a changed one; the section "
        '"Where the verdicts come from" gives both hashes). `attnbias reproduce NAME --full '
        "--out ROOT` makes them again from the default, reusing every stored run it still "
        "needs.",
        "",
    ]


def provenance(found: dict[str, dict], others: list[str]) -> list[str]:
    """Where each experiment's verdicts come from: the code version and config hash its
    summary was made by, whether that is the current default config's (`other_configs`), and
    its scale (a stale summary is visible row by row)."""
    if not found:
        return []

    def short(value) -> str:  # a summary is untrusted: its text is bounded and escaped
        return cell(str(value if value is not None else "unknown")[:64])

    return [
        "## Where the verdicts come from",
        "",
        "Each experiment's rows above are read from one published summary, made by this code "
        "version from this config (its hash names the config, `attnbias config NAME` prints "
        "it):",
        "",
        "| experiment | code version | config hash | the current default config | scale |",
        "| --- | --- | --- | --- | --- |",
        *[
            f"| {name} | {short(s.get('code_version'))} | {short(s.get('config_hash'))} | "
            f"{'no: ' + config_key(load_config(name).to_dict()) if name in others else 'yes'} | "
            f"{short(s.get('scale', 'full'))} |"
            for name, s in found.items()
        ],
        "",
    ]


def claims_markdown(root: str | Path, command: str) -> str:
    """The register (Markdown), with the verdicts of the summaries under root; `command` is
    named as what generated it."""
    return register_markdown(summaries(Path(root)), command)


def rows_count(n: int, one: str = "repeats", many: str = "repeat") -> str:
    """ "1 row repeats", "3 rows repeat": a count with its verb in number."""
    return f"{n} row {one}" if n == 1 else f"{n} rows {many}"


def register_markdown(found: dict[str, dict], command: str, figure: str | None = None) -> str:
    """The register (Markdown) of the summaries `found` (by experiment name); `figure`: the
    path of its forest plot, shown above the table."""
    rows = register_rows(found)
    others = other_configs(found)  # each summary's config against the current default, once
    repeats = [row for row in rows if row.same_as]
    replaced = [row for row in rows if row.superseded_by]
    counted = [row for row in rows if not row.same_as and not row.superseded_by]
    paper = [row for row in counted if not row.consistency]
    checks = [row for row in counted if row.consistency]
    lines = [
        "# Claims register",
        "",
        f"Generated by `{command}` from the `summary.json` of each experiment under that "
        "results root. Every claim of the seed papers that concerns something runnable is "
        "listed with the experiment claim (id) that tests it, how our protocol differs, and "
        f'its current verdict. "{NOT_RUN_WORDS}" means no published summary of that experiment '
        "is under the root. Details and figures: RESULTS.md; methods: REAL_DATA.md.",
        "",
        "## Papers",
        "",
        *[f"- **{key}**: {text}" for key, text in PAPERS.items()],
        "",
        QUOTES,
        "",
        "## Claims tested here",
        "",
        READING,
        "",
        f"Verdicts: {counts(paper)}.",
        "",
        *by_source(paper),
        *fragile_decided(paper),
        *other_configs_line(others),
        *(
            [
                f"Not counted: {rows_count(len(repeats))} another row's evidence (the same runs "
                "and numbers, or the same runs read at another point), each pointing to it "
                '(section "Rows repeating another row\'s evidence").',
                "",
            ]
            if repeats
            else []
        ),
        *(
            [
                f"Not counted either: {rows_count(len(replaced), 'is', 'are')} superseded by a "
                "later row whose design decides the claim, each pointing to it (section "
                '"Rows superseded by another row").',
                "",
            ]
            if replaced
            else []
        ),
        *(
            [
                f"![every measured claim part against its threshold]({figure})",
                "",
                f"*{forest.CAPTION}*",
                "",
            ]
            if figure
            else []
        ),
        *markdown_table(paper),
        "",
    ]
    if checks:
        lines += [
            "## Consistency checks of the code",
            "",
            CHECKS_READING,
            "",
            f"Checks: {counts(checks)}.",
            "",
            *markdown_table(checks),
            "",
        ]
    if repeats:
        lines += ["## Rows repeating another row's evidence", "", REPEATS_READING, "",
                  *repeats_table(repeats), ""]  # fmt: skip
    if replaced:
        lines += ["## Rows superseded by another row", "", SUPERSEDED_READING, "",
                  *repeats_table(replaced), ""]  # fmt: skip
    if missing := unregistered(found):
        lines += ["Claims of the summaries not in the register: " + ", ".join(missing), ""]
    lines += provenance(found, others)
    lines += [
        "## Claims not tested here",
        "",
        "| paper | where | claim | why not |",
        "| --- | --- | --- | --- |",
        *[
            f"| {u.paper} | {where_read(u.where, u.read_in)} | {u.wording} | {u.reason} |"
            for u in UNTESTED
        ],
        "",
    ]
    return "\n".join(lines)
