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
    models.join_parts(models.qwen_coder_parts(), target, QWEN_CODER_SHA256, QWEN_CODER_BYTES)
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
