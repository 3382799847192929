"""Publishing the rollouts as a Hugging Face dataset: a release folder, then an upload.

``build_release`` turns the tables the notebooks wrote under the data folder into one
parquet file per config and a dataset card whose YAML lists the configs, so that
``datasets.load_dataset(folder_or_repo, config)`` loads each one. The card records what a
reader needs to trust the rows: the code version, the profile, the models, seeds and
sampling settings found in the data, what each config reproduces, and which choices are
this package's own. The same data gives the same bytes.

``upload_release`` sends a built folder to the Hub (``HF_ENDPOINT`` honoured, the token from
``HF_TOKEN`` only); a failure is one line and leaves the folder as it was.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from paperlib import paths

if TYPE_CHECKING:  # pandas and huggingface_hub load only when a release is built or sent: the CLI stays quick
    import pandas as pd


@dataclass(frozen=True)
class Config:
    """One dataset config: one table under the data folder, read from files or a RolloutStore.

    ``files`` is a glob under the data folder (every match is stacked); ``store`` names a
    RolloutStore directory instead, and ``table`` which of its tables.
    ``notebook`` is empty for a table typed in from the papers rather than computed.
    """

    name: str
    notebook: str
    reproduces: str
    description: str
    files: str = ""
    store: str = ""
    table: str = "episodes"

    @property
    def source(self) -> str:
        return f"{self.store}/{self.table}/" if self.store else self.files


CONFIGS: tuple[Config, ...] = (
    Config(
        "philosophers_scripted_episodes",
        "01_environment_and_reward",
        "paper A: the reward analysis and its degenerate maximum (reported A18)",
        "scripted policies at the dining table, one row per episode with every reward term",
        files="01_scripted_episodes.parquet",
    ),
    Config(
        "philosophers_llm_episodes",
        "02_coordination_gap",
        "paper A: the main table and Figure 1 (reported A01-A08, A13)",
        "LLM philosophers and scripted baselines, one row per episode with every reward term",
        files="02_episodes.parquet",
    ),
    Config(
        "philosophers_llm_steps",
        "02_coordination_gap",
        "paper A: valid-call rates per prompt version and the no-call case",
        "every philosopher's decision: raw completion, parsed action, valid flag, state after",
        files="02_steps.parquet",
    ),
    Config(
        "bandit_episodes",
        "11_bandit_greediness",
        "paper B: Fig. 3, Fig. 16 and Fig. 19 (reported B01-B05)",
        "LLM and classic-baseline bandit runs, one row per instance: regret, coverage, invalid steps",
        store="11_bandit_runs",
        table="episodes",
    ),
    Config(
        "bandit_steps",
        "11_bandit_greediness",
        "paper B: Fig. 3, Fig. 16 and Fig. 19 (reported B01-B05)",
        "every bandit step: arm, reward, regret and coverage so far, raw completion",
        store="11_bandit_runs",
        table="steps",
    ),
    Config(
        "frequency_bias",
        "12_frequency_bias",
        "paper B: Fig. 4 and Fig. 15 (reported B06-B09, B18)",
        "each model's action distribution after a history whose last action repeats 0-100 times",
        store="12_frequency_bias_runs",
        table="episodes",
    ),
    Config(
        "knowing_doing_episodes",
        "13_knowing_doing_gap",
        "paper B: Fig. 5 (reported B10-B16)",
        "bandit runs under the UCB (knowing-doing) prompt, one row per instance",
        store="13_knowing_doing_runs",
        table="episodes",
    ),
    Config(
        "knowing_doing_steps",
        "13_knowing_doing_gap",
        "paper B: Fig. 5 (reported B10-B16)",
        "every knowing-doing step: the completion with its UCB values, the arm scores, the action",
        store="13_knowing_doing_runs",
        table="steps",
    ),
    Config(
        "grpo_training_log",
        "03_grpo_training",
        "paper A: the GRPO training curve, its peak and the saved step (reported A14, A15)",
        "one row per GRPO step of the paper-reward run (of each training seed, train_seed, where there are "
        "several): reward and its terms, deadlocks, valid calls, KL, seconds, the adapter's hash",
        files="03_training_log.parquet",
    ),
    Config(
        "grpo_positive_control_log",
        "03_grpo_training",
        "ours: the GRPO trainer learning a reward the model can reach, before the null result",
        "one row per GRPO step of the positive-control run (reward: the share of valid calls)",
        files="03_positive_control.parquet",
    ),
    Config(
        "grpo_validation",
        "04_grpo_null_result",
        "paper A: the checkpoint-selection rules (ours: last, best on training, best on validation)",
        "each saved adapter's mean reward on validation seeds (per training seed where there are several)",
        files="04_validation.parquet",
    ),
    Config(
        "grpo_eval_episodes",
        "04_grpo_null_result",
        "paper A: base model against the GRPO adapter at each N (reported A05, A08-A12)",
        "one row per held-out episode, for the base model and each selected adapter (of each training seed), "
        "with every reward term",
        files="04_episodes.parquet",
    ),
    Config(
        "grpo_interventions_log",
        "05_interventions",
        "ours: paper A's three prescriptions, run (reward shaping, a curriculum over N, paper B's penalty)",
        "one row per GRPO step of each run and training seed (the recipe's from notebook 03): its own reward, "
        "the step's N, the share of groups with a learning signal, meals, deadlocks, valid calls, seconds",
        files="05_training_log.parquet",
    ),
    Config(
        "grpo_interventions_episodes",
        "05_interventions",
        "ours: paper A's three prescriptions, run, and checkpoint discipline on every run",
        "one row per evaluation episode of each run's kept adapters (last, best_train, best_val; of each training "
        "seed), the base model and the scripted policies that eat, under both rewards",
        files="05_interventions.parquet",
    ),
    Config(
        "table_knowing_doing_turns",
        "06_knowing_doing_at_the_table",
        "ours: paper B's knowing-doing split (Fig. 5) at paper A's table",
        "every philosopher's turn: its stated sensible tool, the rules' sensible set, the action and its class",
        files="06_knowing_doing_turns.parquet",
    ),
    Config(
        "rlft_training_log",
        "14_rlft_bandits",
        "paper B: RLFT on the bandits, with and without the exploration bonus (Fig. 6, Fig. 7)",
        "one row per RLFT update of each run (and training seed): return, regret, coverage, invalid share, KL, "
        "clip fraction, loss, seconds",
        files="14_rlft_log.parquet",
    ),
    Config(
        "rlft_held_out_episodes",
        "14_rlft_bandits",
        "paper B: regret and coverage before and after RLFT (reported B17, B22, B23, B30)",
        "held-out bandit runs of the base model, each RLFT adapter (of each training seed), UCB and random, "
        "one row per instance",
        files="14_held_out_episodes.parquet",
    ),
    Config(
        "rlft_held_out_steps",
        "14_rlft_bandits",
        "paper B: regret and coverage before and after RLFT (reported B17, B22, B23, B30)",
        "every held-out bandit step: arm, reward, regret and coverage so far, valid flag",
        files="14_held_out_steps.parquet",
    ),
    Config(
        "rlft_frequency_bias",
        "14_rlft_bandits",
        "paper B: the frequency bias after RLFT (Fig. 18; reported B18-B21)",
        "the base model's and each adapter's action distribution on notebook 12's cases",
        store="14_frequency_bias_runs",
        table="episodes",
    ),
    Config(
        "rlft_harder_control_log",
        "14_rlft_bandits",
        "ours: RLFT's positive control on a model that rarely writes a valid action",
        "one row per RLFT update of each such model: invalid share, return, KL, loss, seconds",
        files="14_harder_control_log.parquet",
    ),
    Config(
        "rlft_harder_control_episodes",
        "14_rlft_bandits",
        "ours: RLFT's positive control on a model that rarely writes a valid action",
        "held-out bandit runs of each such model before and after RLFT, one row per instance",
        files="14_harder_control_episodes.parquet",
    ),
    Config(
        "rlft_cot_ablation_log",
        "14_rlft_bandits",
        "paper B: RLFT with and without CoT (Fig. 9b's ablation, on the bandits)",
        "one row per RLFT update of the recipe with its CoT flipped",
        files="14_cot_ablation_log.parquet",
    ),
    Config(
        "rlft_cot_ablation_episodes",
        "14_rlft_bandits",
        "paper B: RLFT with and without CoT (Fig. 9b's ablation, on the bandits)",
        "held-out bandit runs of the base model and the adapter with the CoT flipped, one row per instance",
        files="14_cot_ablation_episodes.parquet",
    ),
    Config(
        "exploration_episodes",
        "15_exploration_mechanisms",
        "paper B: the exploration mechanisms (Fig. 8)",
        "bandit runs under each exploration mechanism, UCB and random, one row per instance",
        store="15_exploration_runs",
        table="episodes",
    ),
    Config(
        "exploration_steps",
        "15_exploration_mechanisms",
        "paper B: the exploration mechanisms (Fig. 8)",
        "every step of those runs, with which mechanism chose the arm (`chosen_by`)",
        store="15_exploration_runs",
        table="steps",
    ),
    Config(
        "tictactoe_rlft_log",
        "16_tictactoe",
        "paper B: RLFT on tic-tac-toe with a value head and GAE (Fig. 9)",
        "one row per update of each run (and training seed): training return, wins, losses, invalid moves, "
        "value loss, KL, loss, seconds",
        files="16_rlft_log.parquet",
    ),
    Config(
        "tictactoe_held_out_games",
        "16_tictactoe",
        "paper B: returns before and after RLFT, without the legal moves, per thinking budget (reported B24-B28)",
        "held-out games of the base model, each adapter (of each training seed) and the scripted players, "
        "one row per game and cell",
        files="16_held_out_games.parquet",
    ),
    Config(
        "tictactoe_held_out_steps",
        "16_tictactoe",
        "paper B: returns before and after RLFT (reported B24-B28)",
        "every move of those games: board, proposed and played cell, valid flag, the opponent's reply, completion",
        files="16_held_out_steps.parquet",
    ),
    Config(
        "claims",
        "99_claims",
        "both papers: every reported number beside ours, with a verdict",
        "one row per claim: the paper's number, ours with its interval, the test, the verdict, the source",
        files="claims.csv",
    ),
    Config(
        "paper_reported",
        "",
        "the papers' own numbers, drawn beside ours in every notebook",
        "each number the two papers report that a notebook compares with, and where it is stated",
        files="paper_reported.csv",
    ),
)

# Choices the papers leave open, made by this package [ours]; the README lists them too.
RECONSTRUCTIONS = (
    "Paper A: R = 5 evaluation rounds, `simultaneous` turn order, a deadlock ends the episode.",
    "Paper A: r_thru normalised by the exact maximum number of meals (verified by exhaustive search), "
    "r_fair by the largest possible variance of meal counts, the reward clipped to [0, 1].",
    "Paper A, LLM philosophers: sampling temperature 1.0; the prompt wording and versions; each model's "
    "prompt version chosen by its valid-call rate, never by reward.",
    "Both papers: a `constrained` decision mode (the model's scores of the legal actions after a forced "
    "call prefix) beside the papers' `free` protocol, in which a completion with no parseable action "
    "is no action (paper A) or a random arm flagged invalid (paper B).",
    "Paper B: the prompt wording (`bandit-v2`), and the choices each notebook (11-13) lists at its top.",
    "Local models run in float32 on a CPU (bfloat16 on a GPU).",
)

LICENSE = "cc-by-4.0"
PRETTY_NAME = "LLM agents at the dining table and at the bandit: rollouts"
TAGS = [
    "llm-agents",
    "multi-agent",
    "dining-philosophers",
    "multi-armed-bandits",
    "reinforcement-learning",
    "grpo",
    "reproducibility",
]
# Columns whose distinct values the card lists: how the rows were sampled.
SETTINGS = (
    "profile",
    "backend",
    "decision",
    "decision_mode",
    "prompt_version",
    "prompt",
    "temperature",
    "max_new_tokens",
    "cot",
    "mode",
)
_REPO_ID = re.compile(
    r"(?!.*(--|\.\.))[A-Za-z0-9]([\w.-]{0,94}[A-Za-z0-9])?/[A-Za-z0-9]([\w.-]{0,94}[A-Za-z0-9])?", re.ASCII
)
_SPLIT_FILE = "train.parquet"


def check_repo_id(repo_id: str) -> str:
    """``repo_id`` if it is a Hub id ``owner/name``, else a one-line ValueError."""
    if not _REPO_ID.fullmatch(repo_id):
        raise ValueError(f"bad repo id {repo_id!r}: expected owner/name (letters, digits, '-', '_', '.')")
    return repo_id


def read_config(config: Config, data_dir: Path) -> pd.DataFrame | None:
    """The config's rows, or None when its files are missing or hold no rows."""
    import pandas as pd

    from paperlib.data import RolloutStore

    if config.store:
        if not (data_dir / config.store / "episodes").is_dir():
            return None
        frame = getattr(RolloutStore(data_dir / config.store), config.table)()
    else:
        found = sorted(data_dir.glob(config.files))
        if not found:
            return None
        frame = pd.concat(
            [pd.read_csv(path) if path.suffix == ".csv" else pd.read_parquet(path) for path in found], ignore_index=True
        )
    return None if frame.empty else frame


def code_version() -> str:
    """The checkout's git commit, or "unknown" outside a git checkout."""
    try:
        result = subprocess.run(["git", "rev-parse", "HEAD"], cwd=paths.ROOT, capture_output=True, text=True)
    except OSError:
        return "unknown"
    return result.stdout.strip() if result.returncode == 0 else "unknown"


def build_release(
    out_dir: str | os.PathLike,
    repo_id: str,
    data_dir: str | os.PathLike = paths.DATA,
    profile: str = "cpu",
    commit: str | None = None,
) -> Path:
    """Write ``out_dir/<config>/train.parquet`` for every config with data, and ``out_dir/README.md``.

    A config whose files are missing is skipped and named in the card; none at all is an
    error. An existing ``out_dir`` is replaced only if it holds nothing but a release.
    """
    from paperlib.data import check_writable, write_parquet
    from paperlib.profiles import get_profile

    check_repo_id(repo_id)
    get_profile(profile)
    out_dir, data_dir = Path(out_dir), Path(data_dir)
    _check_replaceable(out_dir)
    tables = {config.name: read_config(config, data_dir) for config in CONFIGS}
    if all(frame is None for frame in tables.values()):
        raise ValueError(f"nothing to publish: no config's files exist under {data_dir} (run the notebooks first)")
    check_writable(out_dir.parent / f".{out_dir.name}.probe")
    staging = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}."))
    try:
        for name, frame in tables.items():
            if frame is not None:
                write_parquet(frame, staging / name / _SPLIT_FILE)
        card = dataset_card(tables, repo_id, profile, commit or code_version())
        card.save(staging / "README.md")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out_dir


def release_summary(release: str | os.PathLike, loaded: dict) -> pd.DataFrame:
    """One row per config of the built ``release`` folder (``loaded``: config name -> the dataset
    ``datasets.load_dataset`` gave back): its rows and columns, what a row is, the notebook that
    wrote it and the size of its parquet file. What notebook 90 shows instead of the card."""
    import pandas as pd

    release = Path(release)
    by_name = {config.name: config for config in CONFIGS}
    return pd.DataFrame(
        [
            {
                "config": name,
                "rows": data.num_rows,
                "columns": data.num_columns,
                "what a row is": by_name[name].description,
                "notebook": by_name[name].notebook or "typed in from the papers",
                "parquet (MB)": round((release / name / _SPLIT_FILE).stat().st_size / 1e6, 2),
            }
            for name, data in loaded.items()
        ]
    )


def _check_replaceable(out_dir: Path) -> None:
    from paperlib.data import OutputError

    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise OutputError(f"output path {out_dir} is not a directory")
    names = {config.name for config in CONFIGS} | {"README.md"}
    foreign = sorted(p.name for p in out_dir.iterdir() if p.name not in names)
    if foreign:
        raise OutputError(f"{out_dir} holds {foreign[0]!r}, not part of a release; choose another output folder")


def dataset_card(tables: dict[str, pd.DataFrame | None], repo_id: str, profile: str, commit: str):
    """The card: YAML listing the configs that have data, then what produced them."""
    from huggingface_hub import DatasetCard, DatasetCardData

    present = [config for config in CONFIGS if tables[config.name] is not None]
    data = DatasetCardData(
        license=LICENSE,
        pretty_name=PRETTY_NAME,
        tags=TAGS,
        configs=[
            {"config_name": c.name, "data_files": [{"split": "train", "path": f"{c.name}/{_SPLIT_FILE}"}]}
            for c in present
        ],
    )
    return DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{_card_body(tables, repo_id, profile, commit)}")


def _card_body(tables, repo_id: str, profile: str, commit: str) -> str:
    present = [config for config in CONFIGS if tables[config.name] is not None]
    missing = [config for config in CONFIGS if tables[config.name] is None]
    lines = [
        f"# {PRETTY_NAME}",
        "",
        "Rollouts behind two papers on LLM agents, generated and analysed by the `paperlib` package:",
        "paper A, *GRPO Does Not Close the Multi-Agent Coordination Gap* (LLM agents as dining",
        "philosophers), and paper B, *LLMs are Greedy Agents* (exploration in multi-armed bandits).",
        "Each config is one table a notebook wrote; the notebook rebuilds the paper's figure or",
        "table from it.",
        "",
        f"- Code version: `paperlib` at git commit `{commit}`",
        f"- Profile: `{profile}` (the size of every run; `smoke`, `cpu` or `paper`)",
        f'- Load a config: `datasets.load_dataset("{repo_id}", "{present[0].name}")`',
        "",
        "## Configs",
        "",
        "| config | rows | notebook | reproduces | what a row is |",
        "|---|---|---|---|---|",
    ]
    for config in present:
        notebook = f"`{config.notebook}`" if config.notebook else "typed in from the papers"
        lines.append(
            f"| `{config.name}` | {len(tables[config.name])} | {notebook} | {config.reproduces} "
            f"| {config.description} |"
        )
    if missing:
        lines += ["", "Not in this release (their files were missing when it was built):", ""]
        lines += [f"- `{c.name}`: no data at `{c.source}` (notebook `{c.notebook}`)" for c in missing]
    lines += ["", "## Models, seeds and sampling settings found in the data", ""]
    for config in present:
        lines += [f"### `{config.name}`", "", *_facts(tables[config.name]), ""]
    lines += [
        "## Choices that are this package's own",
        "",
        "The papers leave these open; `paperlib` marks them **[ours]** in its code and notebooks:",
        "",
    ]
    lines += [f"- {choice}" for choice in RECONSTRUCTIONS]
    return "\n".join(lines) + "\n"


def _facts(frame: pd.DataFrame) -> list[str]:
    facts = []
    if "model" in frame:
        facts.append(f"- models and scripted policies: {_values(frame['model'])}")
    if "seed" in frame:
        seeds = frame["seed"].dropna()
        facts.append(f"- seeds: {seeds.min()}-{seeds.max()} ({seeds.nunique()} distinct)")
    for column in SETTINGS:
        if column == "prompt" and column in frame and frame[column].astype(str).str.len().max() > PROMPT_NAME_LENGTH:
            facts += _prompt_examples(frame)
        elif column in frame:
            facts.append(f"- `{column}`: {_values(frame[column])}")
    return facts or ["- no model, seed or sampling columns"]


PROMPT_NAME_LENGTH = 64  # a longer `prompt` value is a prompt's text, not the name of a prompt style


def _prompt_examples(frame: pd.DataFrame) -> list[str]:
    """A column of full prompts, summarised: how many distinct prompts (a row's ``prompt_hash``
    names its prompt), and one example per prompt version (the first row's), not every prompt."""
    frame = frame.dropna(subset=["prompt"])
    versions = frame.groupby("prompt_version", sort=True) if "prompt_version" in frame else [("", frame)]
    hashes = "each row names its prompt by `prompt_hash`; " if "prompt_hash" in frame else ""
    per_version = " per prompt version" if "prompt_version" in frame else ""
    facts = [
        f"- `prompt`: {frame['prompt'].nunique()} distinct prompts (the rows' histories differ); "
        f"{hashes}one example{per_version}:"
    ]
    for version, rows in versions:
        label = f"`{version}`: " if version else ""
        facts += [
            "",
            f"<details><summary>{label}{rows['prompt'].nunique()} distinct prompts, the first row's shown</summary>",
            "",
            "~~~~text",
            rows["prompt"].iloc[0],
            "~~~~",
            "",
            "</details>",
            "",
        ]
    return facts


def _values(column: pd.Series) -> str:
    values = sorted(column.dropna().unique().tolist())
    return ", ".join(f"`{value:g}`" if isinstance(value, float) else f"`{value}`" for value in values) or "none"


class UploadError(OSError):
    """An upload that failed; the message is one line, without the token."""


def upload_release(folder: str | os.PathLike, repo_id: str, private: bool = False, token: str | None = None) -> str:
    """Create the dataset repo if needed and upload the release folder into it; returns the repo's URL.

    The endpoint is ``HF_ENDPOINT`` when set; the token is ``token`` or ``HF_TOKEN``, never
    the Hub's stored login. The folder is only read.
    """
    folder = Path(folder)
    check_repo_id(repo_id)
    if not (folder / "README.md").is_file():
        raise ValueError(f"{folder} is not a release folder (no README.md); build one first")
    token = token or os.environ.get("HF_TOKEN")
    if not token:
        raise ValueError("no Hub token: set HF_TOKEN to a token with write access")
    from huggingface_hub import HfApi

    api = HfApi(endpoint=os.environ.get("HF_ENDPOINT") or None, token=token)
    try:
        url = api.create_repo(repo_id, repo_type="dataset", exist_ok=True, private=private)
        api.upload_folder(
            repo_id=repo_id,
            folder_path=folder,
            repo_type="dataset",
            commit_message="Release the rollouts (paperlib publish)",
        )
    except Exception as exc:  # HTTP errors, dropped connections, bad answers: all end the same way
        why = " ".join(_reason(exc).replace(token, "***").split()).rstrip(".")
        raise UploadError(f"upload to {repo_id} failed: {why}; the release is intact at {folder}") from None
    return str(url)


def _reason(exc: Exception) -> str:
    """The first line of the error, with the server's own message for an HTTP error."""
    from huggingface_hub.errors import HfHubHTTPError

    lines = str(exc).strip().splitlines()
    first = lines[0] if lines else ""
    if isinstance(exc, HfHubHTTPError):
        return f"{first} ({exc.server_message})" if exc.server_message else first
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def hub_repo_id(text: str) -> str:
    """An argparse type: a Hub dataset id ``owner/name``."""
    try:
        return check_repo_id(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_commands(groups) -> None:
    from paperlib.profiles import PROFILES

    publish = groups.add_parser("publish", help="build the rollouts' dataset release and upload it to the Hub")
    publish.add_argument("--repo-id", required=True, type=hub_repo_id, help="the Hub dataset, OWNER/NAME")
    publish.add_argument("--out", help="release folder (default build/release/<profile>)")
    publish.add_argument("--profile", choices=tuple(PROFILES), default="cpu", help="whose data to publish")
    publish.add_argument("--dry-run", action="store_true", help="build the folder, upload nothing")
    publish.add_argument("--private", action="store_true", help="create the repo private")
    publish.set_defaults(func=publish_command)


def publish_command(args) -> int:
    data_dir = paths.outputs(args.profile)[0]
    out = Path(args.out) if args.out else paths.BUILD / "release" / args.profile
    folder = build_release(out, args.repo_id, data_dir, profile=args.profile)
    configs = sorted(p.name for p in folder.iterdir() if p.is_dir())
    print(f"release of {len(configs)} configs ({', '.join(configs)}) written to {folder}")
    if args.dry_run or not os.environ.get("HF_TOKEN"):
        again = f"paperlib publish --repo-id {args.repo_id} --profile {args.profile} --out {folder}"
        again += " --private" if args.private else ""
        how = (
            f"To upload it, set HF_TOKEN to a token with write access and run `{again}`, or "
            f"`hf upload {args.repo_id} {folder} --repo-type dataset`."
        )
        if args.dry_run:
            print(f"not uploaded (--dry-run). {how}")
            return 0
        # asked to upload and could not: a script must not take this for an upload
        print(f"paperlib: error: not uploaded (HF_TOKEN is not set). {how}", file=sys.stderr)
        return 1
    print(f"uploaded to {upload_release(folder, args.repo_id, private=args.private)}")
    return 0
