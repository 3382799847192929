"""No secret reaches a file: the smoke pipeline run with fake values in every environment
variable the package reads a secret from (grep ``os.environ`` in paperlib: the OpenAI-compatible
gateway's key, ``PAPERLIB_OPENAI_API_KEY`` or ``OPENAI_API_KEY``, and the Hub token ``HF_TOKEN``).

The pipeline runs notebooks 01, 11, 12, 90 and 99 on the smoke profile in a copy of the
repository (``PAPERLIB_HOME``), as ``./reproduce.sh --profile smoke --only ...`` does: 01 plays
scripted episodes, 11 and 12 load the embedded SmolLM2 through the backend factory (which picks
the gateway's backend on the ``paper`` profile), 99 collects their claims, and 90 builds the
release and its dataset card; 90 then runs once more with ``repo_id`` set, pushing the release to
the loopback Hub with ``HF_TOKEN``. Notebooks 02, 06 and 13 are left out: they load the same model
through the same code as 11 and 12 and add minutes at smoke size. No smoke notebook talks to a
gateway (only the ``paper`` profile's frontier models do), so the gateway's key is set here to
show that nothing copies it from the environment into a file.
"""

import shutil
import subprocess
import sys

import pytest
from fake_hub_server import FakeHubServer

from paperlib import paths, pipeline

SECRETS = {
    "PAPERLIB_OPENAI_API_KEY": "sk-FAKE-gateway-secret-0123456789",
    "OPENAI_API_KEY": "sk-FAKE-openai-secret-0123456789",
    "HF_TOKEN": "hf_FAKE_pipeline_secret_0123456789",
}
NOTEBOOKS = ["01", "11", "12", "90", "99"]
REPO = "someone/paperlib-rollouts"


@pytest.mark.slow
def test_no_secret_reaches_a_file_the_smoke_pipeline_writes(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    (home / "notebooks").mkdir(parents=True)
    for notebook in pipeline.notebooks(NOTEBOOKS):
        shutil.copy(notebook, home / "notebooks")
    (home / "data").mkdir()
    shutil.copy(paths.PAPER_REPORTED, home / "data")
    with FakeHubServer() as hub:
        environment = {
            "PAPERLIB_HOME": str(home),
            "PAPERLIB_CACHE": str(paths.CACHE),  # the embedded models
            "HF_ENDPOINT": hub.url,
            "HF_HUB_DISABLE_XET": "1",
            **SECRETS,
        }
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        run = subprocess.run(
            [sys.executable, "-m", "paperlib.cli", "notebooks", "--profile", "smoke", "--only", *NOTEBOOKS],
            capture_output=True,
            text=True,
            cwd=home,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        data = {p.name for p in (home / "build" / "smoke" / "data").iterdir()}
        assert {"11_claims.parquet", "12_claims.parquet", "claims.csv"} <= data
        (publishing,) = (home / "notebooks").glob("90_*.ipynb")
        pipeline.execute(publishing, "smoke", out_dir=home / "build" / "pushed", parameters={"repo_id": REPO})

    assert hub.files(REPO)["README.md"] == (home / "build" / "release" / "smoke" / "README.md").read_bytes()
    upload = [r for r in hub.requests if r.path.startswith(("/api/repos/", "/api/datasets/"))]
    assert {r.headers.get("authorization") for r in upload} == {f"Bearer {SECRETS['HF_TOKEN']}"}  # it was read

    written = [p for p in home.rglob("*") if p.is_file()]
    assert len(written) > 20  # executed notebooks, HTML, data, figures, the release, the card, index.html
    printed = run.stdout + run.stderr + "".join(capsys.readouterr())
    for name, secret in SECRETS.items():
        leaks = [str(p.relative_to(home)) for p in written if secret.encode() in p.read_bytes()]
        assert not leaks, f"{name} in {leaks}"
        assert secret not in printed, f"{name} in the log"
        assert not any(secret.encode() in data for data in hub.files(REPO).values()), f"{name} published"
