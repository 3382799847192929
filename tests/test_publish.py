"""The dataset release: built from parquet under a data folder, loaded back with ``datasets``,
uploaded by the real huggingface_hub client to a loopback Hub (tests/fake_hub_server.py)."""

from __future__ import annotations

import subprocess

import datasets
import huggingface_hub
import huggingface_hub.constants
import pandas as pd
import pytest
import yaml
from fake_hub_server import FakeHubServer

from paperlib import cli, paths, publish
from paperlib.data import RolloutStore

TOKEN = "hf_FAKE_SECRET_token_0123456789"
REPO = "someone/paperlib-rollouts"
TINY_CONFIGS = [
    "philosophers_scripted_episodes",
    "philosophers_llm_episodes",
    "philosophers_llm_steps",
    "bandit_episodes",
    "bandit_steps",
    "frequency_bias",
    "paper_reported",
]


@pytest.fixture
def data_dir(tmp_path):
    """A tiny data folder: one or two rows per table, the knowing-doing store (13) left out."""
    data = tmp_path / "data"
    data.mkdir()
    pd.DataFrame(
        {"model": ["policy:waiter", "policy:random"], "seed": [0, 1], "profile": "smoke", "reward": [0.5, 1.0]}
    ).to_parquet(data / "01_scripted_episodes.parquet")
    pd.DataFrame(
        {
            "model": ["tiny-lm", "tiny-lm", "policy:waiter"],
            "seed": [3, 4, 3],
            "decision": ["free", "constrained", "scripted"],
            "temperature": [1.0, 1.0, None],
            "prompt_version": ["rules-v1", "rules-v1", None],
        }
    ).to_parquet(data / "02_episodes.parquet")
    pd.DataFrame(
        {
            "model": ["tiny-lm"],
            "seed": [3],
            "raw_completion": ["<tool_call>eat</tool_call>"],
            "completion_token_ids": [[1, 2, 3]],
        }
    ).to_parquet(data / "02_steps.parquet")
    store = RolloutStore(data / "11_bandit_runs")
    store.append(
        pd.DataFrame({"model": ["baseline:ucb"] * 2, "seed": [0, 1], "regret": [1.0, 2.0]}),
        pd.DataFrame({"seed": [0, 0, 1], "step": [0, 1, 0], "action": [2, 1, 0]}),
    )
    store.append(
        pd.DataFrame({"model": ["tiny-lm"], "seed": [7], "regret": [3.5], "temperature": [0.0]}),
        pd.DataFrame({"seed": [7], "step": [0], "action": [4], "completion_ids": [[9, 8]]}),
    )
    frequency = RolloutStore(data / "12_frequency_bias_runs")
    for model, seeds in (("tiny-lm", [0, 1]), ("other-lm", [2])):
        frequency.append(
            pd.DataFrame({"model": model, "cases": "0123456789ab", "seed": seeds, "probs": [[0.5, 0.5]] * len(seeds)})
        )
    pd.DataFrame({"model": ["tiny-lm"], "r": [-0.5]}).to_parquet(data / "12_frequency_bias_claims.parquet")
    (data / "paper_reported.csv").write_text("paper,id,value\nA,A01,0.45\nB,B01,not significant\n")
    return data


@pytest.fixture
def offline(monkeypatch):
    """Any Hub request raises from here on: loading must need none."""
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)


@pytest.fixture
def hub(monkeypatch):
    """The loopback Hub as the endpoint, a fake token in HF_TOKEN, the plain (non-xet) commit path."""
    with FakeHubServer() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_XET", True)
        yield fake


@pytest.fixture
def paperlib_main(monkeypatch):
    """``paperlib ...`` through the package's entry point, with only the publish group registered."""

    def build_parser():
        parser = cli._Parser(prog="paperlib")
        publish.add_commands(parser.add_subparsers(dest="group", required=True, parser_class=cli._Parser))
        return parser

    monkeypatch.setattr(cli, "build_parser", build_parser)
    return cli.main


def snapshot(folder) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def card_yaml(folder) -> dict:
    return yaml.safe_load((folder / "README.md").read_text().split("---\n")[1])


def load(folder, config, tmp_path):
    return datasets.load_dataset(str(folder), config, split="train", cache_dir=str(tmp_path / "hf-cache"))


def test_every_config_with_data_loads_offline_and_holds_the_rows(data_dir, tmp_path, offline):
    folder = publish.build_release(tmp_path / "release", REPO, data_dir, profile="smoke", commit="abc123")
    assert [c["config_name"] for c in card_yaml(folder)["configs"]] == TINY_CONFIGS
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == sorted(TINY_CONFIGS)
    loaded = {config: load(folder, config, tmp_path).to_pandas() for config in TINY_CONFIGS}
    assert loaded["philosophers_llm_episodes"]["decision"].tolist() == ["free", "constrained", "scripted"]
    assert loaded["philosophers_llm_steps"]["completion_token_ids"].map(list).tolist() == [[1, 2, 3]]
    episodes, steps = loaded["bandit_episodes"], loaded["bandit_steps"]  # both shards, their columns joined
    assert episodes["seed"].tolist() == [0, 1, 7] and episodes["temperature"].isna().tolist() == [True, True, False]
    assert steps["action"].tolist() == [2, 1, 0, 4] and list(steps["completion_ids"].iloc[-1]) == [9, 8]
    frequency = loaded["frequency_bias"]  # both shards; the claims table is not part of it
    assert frequency[["model", "seed"]].values.tolist() == [["tiny-lm", 0], ["tiny-lm", 1], ["other-lm", 2]]
    assert set(frequency["cases"]) == {"0123456789ab"}
    assert loaded["paper_reported"]["value"].tolist() == ["0.45", "not significant"]


def test_the_card_records_the_code_data_and_choices(data_dir, tmp_path):
    folder = publish.build_release(tmp_path / "release", REPO, data_dir, profile="smoke", commit="abc123")
    meta = card_yaml(folder)
    assert (meta["license"], meta["pretty_name"], meta["tags"]) == (publish.LICENSE, publish.PRETTY_NAME, publish.TAGS)
    card = huggingface_hub.DatasetCard.load(folder / "README.md")
    body = card.text
    assert "git commit `abc123`" in body and "Profile: `smoke`" in body
    assert f'load_dataset("{REPO}", "philosophers_scripted_episodes")' in body
    episodes = body.split("### `philosophers_llm_episodes`")[1].split("###")[0]
    assert "`policy:waiter`, `tiny-lm`" in episodes and "seeds: 3-4 (2 distinct)" in episodes
    assert "`temperature`: `1`" in episodes and "`decision`: `constrained`, `free`, `scripted`" in episodes
    assert "`other-lm`, `tiny-lm`" in body.split("### `frequency_bias`")[1]
    assert "`knowing_doing_episodes`: no data at `13_knowing_doing_runs/episodes/`" in body
    assert "`knowing_doing_steps`: no data at `13_knowing_doing_runs/steps/`" in body
    assert all(choice in body for choice in publish.RECONSTRUCTIONS)


def test_the_same_data_gives_the_same_bytes(data_dir, tmp_path):
    first = snapshot(publish.build_release(tmp_path / "one", REPO, data_dir))
    second = snapshot(publish.build_release(tmp_path / "two", REPO, data_dir))
    again = snapshot(publish.build_release(tmp_path / "one", REPO, data_dir))  # a rebuild replaces the release
    assert first == second == again
    assert set(first) == {"README.md", *(f"{config}/train.parquet" for config in TINY_CONFIGS)}


def test_the_code_version_is_the_git_commit_or_unknown(monkeypatch, tmp_path):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=paths.ROOT, capture_output=True, text=True)
    assert publish.code_version() == (head.stdout.strip() if head.returncode == 0 else "unknown")
    monkeypatch.setattr(paths, "ROOT", tmp_path)  # not a git checkout
    assert publish.code_version() == "unknown"


def test_no_data_at_all_is_one_line_and_builds_nothing(tmp_path):
    with pytest.raises(ValueError, match=r"^nothing to publish: no config's files exist under .*$"):
        publish.build_release(tmp_path / "release", REPO, tmp_path)
    assert not (tmp_path / "release").exists()


def test_a_folder_holding_anything_but_a_release_is_not_replaced(data_dir, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="holds 'notes.txt', not part of a release"):
        publish.build_release(tmp_path / "mine", REPO, data_dir)
    assert snapshot(tmp_path / "mine") == {"notes.txt": b"keep me"}


def test_upload_sends_the_release_bytes_and_the_token_only_as_authorization(data_dir, tmp_path, hub):
    folder = publish.build_release(tmp_path / "release", REPO, data_dir)
    url = publish.upload_release(folder, REPO, private=True)
    assert url == f"{hub.url}/datasets/{REPO}"
    assert hub.files(REPO) == snapshot(folder)
    assert hub.repos[REPO]["type"] == "dataset" and hub.repos[REPO]["private"]
    assert hub.unknown == []
    assert {r.headers.get("authorization") for r in hub.requests} == {f"Bearer {TOKEN}"}
    for request in hub.requests:
        others = [value for name, value in request.headers.items() if name != "authorization"]
        assert TOKEN not in request.path and TOKEN.encode() not in request.body
        assert not any(TOKEN in value for value in others)
    publish.upload_release(folder, REPO)  # the repo exists now: a second release is a new commit
    assert hub.files(REPO) == snapshot(folder)


@pytest.mark.parametrize("how, on", [(500, "commit"), (401, None), ("drop", "commit"), ("drop", "create")])
def test_a_failed_upload_is_one_line_and_leaves_the_release_intact(data_dir, tmp_path, hub, how, on):
    folder = publish.build_release(tmp_path / "release", REPO, data_dir)
    before = snapshot(folder)
    hub.fail(how, on=on)
    with pytest.raises(publish.UploadError) as failure:
        publish.upload_release(folder, REPO)
    message = str(failure.value)
    assert message.startswith(f"upload to {REPO} failed: ")
    assert message.endswith(f"; the release is intact at {folder}")
    assert "\n" not in message and TOKEN not in message
    if how != "drop":  # the server's error quotes the Authorization header it saw: redacted
        assert "credentials seen: Bearer ***" in message
    assert failure.value.__cause__ is None and failure.value.__suppress_context__
    assert snapshot(folder) == before


def test_upload_needs_a_token_and_a_release(tmp_path, hub, monkeypatch):
    monkeypatch.delenv("HF_TOKEN")
    (tmp_path / "README.md").write_text("---\nlicense: mit\n---\n")
    with pytest.raises(ValueError, match="^no Hub token: set HF_TOKEN"):
        publish.upload_release(tmp_path, REPO)
    with pytest.raises(ValueError, match="is not a release folder"):
        publish.upload_release(tmp_path / "elsewhere", REPO, token=TOKEN)
    assert hub.requests == []


@pytest.mark.parametrize("bad", ["no-slash", "a/b/c", "owner/", "-owner/name", "owner/na--me", "own er/name"])
def test_the_cli_refuses_a_bad_repo_id_in_one_line_before_building(paperlib_main, tmp_path, capsys, bad):
    with pytest.raises(SystemExit) as exit_:
        paperlib_main(["publish", f"--repo-id={bad}", "--out", str(tmp_path / "release"), "--dry-run"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.count("\n") == 1 and "argument --repo-id: bad repo id" in err and "expected owner/name" in err
    assert not (tmp_path / "release").exists()


def test_the_cli_dry_run_on_the_real_data_builds_a_loadable_release(paperlib_main, tmp_path, hub, capsys, monkeypatch):
    folder = tmp_path / "release"
    assert paperlib_main(["publish", "--repo-id", REPO, "--out", str(folder), "--dry-run"]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert f"written to {folder}" in out and "not uploaded (--dry-run)" in out
    assert f"hf upload {REPO} {folder} --repo-type dataset" in out
    assert hub.requests == []
    configs = [c["config_name"] for c in card_yaml(folder)["configs"]]
    assert configs == [c.name for c in publish.CONFIGS if publish.read_config(c, paths.DATA) is not None]
    assert configs, "the repository's data/ holds rollouts"
    card = (folder / "README.md").read_text()
    assert len(card.encode()) < 100_000, "a card a person can read: one example prompt per version, not every prompt"
    steps = publish.read_config(next(c for c in publish.CONFIGS if c.name == "bandit_steps"), paths.DATA).dropna(
        subset=["prompt"]
    )
    assert f"`prompt`: {steps['prompt'].nunique()} distinct prompts" in card and steps["prompt"].iloc[0] in card
    assert steps["prompt"].iloc[1] not in card
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    for config in configs:
        expected = publish.read_config(next(c for c in publish.CONFIGS if c.name == config), paths.DATA)
        assert load(folder, config, tmp_path).num_rows == len(expected)
    assert not any(TOKEN.encode() in data for data in snapshot(folder).values())
    assert TOKEN not in out + captured.err


def test_the_cli_without_a_token_builds_says_how_to_upload_and_fails(
    paperlib_main, data_dir, tmp_path, hub, capsys, monkeypatch
):
    """Asked to upload without a token: the release is built, and the command exits non-zero with
    one line on stderr, so that a script does not take it for an upload."""
    monkeypatch.delenv("HF_TOKEN")
    monkeypatch.setattr(paths, "outputs", lambda profile: (data_dir, tmp_path / "figures"))
    assert paperlib_main(["publish", "--repo-id", REPO, "--out", str(tmp_path / "release")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("paperlib: error: not uploaded (HF_TOKEN is not set)") and err.count("\n") == 1
    assert (tmp_path / "release" / "README.md").is_file() and hub.requests == []


def test_the_cli_uploads_and_reports_a_failure_in_one_line(paperlib_main, data_dir, tmp_path, hub, capsys, monkeypatch):
    monkeypatch.setattr(paths, "outputs", lambda profile: (data_dir, tmp_path / "figures"))
    folder = tmp_path / "release"
    argv = ["publish", "--repo-id", REPO, "--out", str(folder), "--profile", "smoke"]
    assert paperlib_main(argv) == 0
    out = capsys.readouterr().out
    assert f"uploaded to {hub.url}/datasets/{REPO}" in out and hub.files(REPO) == snapshot(folder)
    assert "Profile: `smoke`" in (folder / "README.md").read_text()
    hub.fail(401)
    assert paperlib_main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1
    assert captured.err.startswith(f"paperlib: error: upload to {REPO} failed: ")
    assert captured.err.endswith(f"; the release is intact at {folder}\n")
    assert TOKEN not in out + captured.out + captured.err
    assert not any(TOKEN.encode() in data for data in snapshot(folder).values())


def test_the_publish_command_is_registered(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["publish", "--help"])
    assert exit_.value.code == 0 and "--repo-id" in capsys.readouterr().out
