"""The hf backend's parts that need no model: the sampler, the shared-prefix attention and
the cache layer with room to grow, each against a plain reference; the memory settings."""

import platform
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.stats import chisquare

from paperlib.backends.hf import SAMPLE_BLOCK, RoomyLayer, sample_, shared_prefix_attention


@pytest.mark.parametrize("vocab", [5, SAMPLE_BLOCK * 2, SAMPLE_BLOCK * 2 + 37])
@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_sample_matches_softmax_and_skips_impossible_tokens(vocab, temperature):
    generator = torch.Generator().manual_seed(1)
    row = torch.randn(vocab, generator=generator) * 2
    row[[1, vocab // 2, vocab - 1]] = float("-inf")
    draws = np.concatenate([sample_(row.repeat(5000, 1), temperature, generator).numpy() for _ in range(4)])
    counts = np.bincount(draws, minlength=vocab)
    assert counts[[1, vocab // 2, vocab - 1]].sum() == 0
    probs = torch.softmax(row.double() / temperature, -1).numpy()
    # tokens binned so that every bin expects at least 20 draws
    order = np.argsort(-probs)
    bins = np.minimum(np.cumsum(probs[order]) * len(draws) // 20, len(draws) // 20 - 1).astype(int)
    observed, expected = np.bincount(bins, counts[order]), np.bincount(bins, probs[order] * len(draws))
    keep = expected > 0
    assert chisquare(observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum()).pvalue > 1e-3


def test_sample_is_seeded():
    logits = torch.randn(64, 1000)
    a = sample_(logits.clone(), 1.0, torch.Generator().manual_seed(3))
    assert torch.equal(a, sample_(logits.clone(), 1.0, torch.Generator().manual_seed(3)))
    assert not torch.equal(a, sample_(logits.clone(), 1.0, torch.Generator().manual_seed(4)))


class _Layer:
    layer_idx = 0


@pytest.mark.parametrize("softcap", [None, 5.0])
def test_shared_prefix_attention_equals_attention_over_the_whole_sequence(softcap):
    torch.manual_seed(0)
    batch, heads, kv_heads, queries, own, n_prefix, dim = 3, 6, 2, 4, 7, 9, 16
    query = torch.randn(batch, heads, queries, dim)
    keys, values = torch.randn(batch, kv_heads, own, dim), torch.randn(batch, kv_heads, own, dim)
    prefix = (torch.randn(kv_heads, n_prefix, dim), torch.randn(kv_heads, n_prefix, dim))
    # left padding in row 0, causal over the last `queries` own slots
    real = torch.ones(batch, own, dtype=torch.bool)
    real[0, :2] = False
    causal = torch.arange(own - queries, own)[:, None] >= torch.arange(own)
    visible = real[:, None, None, :] & causal
    out, _ = shared_prefix_attention(
        _Layer, query, keys, values, visible, scaling=0.3, softcap=softcap, shared_prefix=[prefix]
    )
    # reference: the prefix copied into every row, every query head reading its kv head
    whole_k = torch.cat([prefix[0].expand(batch, -1, -1, -1), keys], 2).repeat_interleave(heads // kv_heads, 1)
    whole_v = torch.cat([prefix[1].expand(batch, -1, -1, -1), values], 2).repeat_interleave(heads // kv_heads, 1)
    scores = query @ whole_k.transpose(2, 3) * 0.3
    if softcap:
        scores = torch.tanh(scores / softcap) * softcap
    seen = torch.cat([torch.ones(batch, 1, queries, n_prefix, dtype=torch.bool), visible], -1)
    reference = (torch.softmax(scores.masked_fill(~seen, float("-inf")), -1) @ whole_v).transpose(1, 2)
    assert out.shape == (batch, queries, heads, dim)
    torch.testing.assert_close(out, reference, atol=1e-5, rtol=1e-5)
    if softcap is None:
        sdpa = F.scaled_dot_product_attention(query, whole_k, whole_v, attn_mask=seen, scale=0.3).transpose(1, 2)
        torch.testing.assert_close(out, sdpa, atol=1e-5, rtol=1e-5)


def test_roomy_layer_grows_in_place_and_selects_rows():
    layer = RoomyLayer(room=2)
    chunks = [torch.randn(4, 2, t, 3) for t in (3, 1, 1, 1, 2)]  # the fourth and fifth outgrow the room
    for i, chunk in enumerate(chunks):
        keys, values = layer.update(chunk, -chunk)
        expected = torch.cat(chunks[: i + 1], 2)
        assert torch.equal(keys, expected) and torch.equal(values, -expected)
    layer.batch_select_indices(torch.tensor([3, 1]))
    assert torch.equal(layer.keys, torch.cat(chunks, 2)[[3, 1]]) and layer.get_seq_length() == 8
    keys, _ = layer.update(torch.ones(2, 2, 1, 3), torch.ones(2, 2, 1, 3))
    assert torch.equal(keys[:, :, :8], torch.cat(chunks, 2)[[3, 1]]) and keys.shape[2] == 9


KEEP_FREED = """
import ctypes
from paperlib.backends.hf import keep_freed_memory

class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype, libc.malloc.restype, libc.malloc.argtypes = Info, ctypes.c_void_p, [ctypes.c_size_t]
keep_freed_memory()
before = libc.mallinfo2()
block = libc.malloc(5 << 29)  # 2.5 GiB, never touched, so it costs no memory
during = libc.mallinfo2()
libc.free(ctypes.c_void_p(block))
print(during.hblkhd - before.hblkhd, during.arena - before.arena, libc.mallinfo2().arena - before.arena)
"""


@pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc" or tuple(map(int, platform.libc_ver()[1].split("."))) < (2, 33),
    reason="glibc's malloc settings, read by mallinfo2 (glibc 2.33)",
)
def test_freed_memory_stays_with_the_process():
    """A block past any size threshold comes from the heap, not a mapping of its own, and
    freeing it leaves the heap as large as it was: more than 2 GiB at the top stays too
    (a round's batch KV at N = 15 is about 2 GB)."""
    out = subprocess.run([sys.executable, "-c", KEEP_FREED], capture_output=True, text=True, check=True).stdout
    mapped, grown, kept = map(int, out.split())
    assert mapped == 0 and grown > 2 << 30
    assert kept == grown


RELEASE_FREED = """
import ctypes, os
from paperlib.backends.hf import keep_freed_memory, release_freed_memory

libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]

def resident():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

keep_freed_memory()
start = resident()
block = libc.malloc(1 << 30)
ctypes.memset(block, 1, 1 << 30)  # touched: 1 GiB resident
libc.free(ctypes.c_void_p(block))
kept = resident()
release_freed_memory()
print(kept - start, resident() - start)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc_trim")
def test_freed_memory_goes_back_to_the_os_when_released():
    """What a phase freed stays resident under keep_freed_memory (a training run's peak, before
    its evaluation) until release_freed_memory hands it back."""
    out = subprocess.run([sys.executable, "-c", RELEASE_FREED], capture_output=True, text=True, check=True).stdout
    kept, released = map(int, out.split())
    assert kept > 0.9 * (1 << 30) and released < 0.1 * (1 << 30)
