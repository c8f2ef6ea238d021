#!/usr/bin/python3
# A plain PyTorch implementation of what `ctxsim run` computes, written from docs/SPEC.md
# (sections 2-4) and docs/STORE.md, independent of ctxsim's C++. Two uses:
#  - the yardstick of scripts/bench_run.sh-style comparisons: "ctxsim vs a plain PyTorch script
#    doing the same job with the same BLAS" (Debian's python3-torch links the same libtorch and
#    OpenBLAS as build/ctxsim). It reads the samples of a ctxsim store, runs a plain forward (BERT,
#    RoBERTa, GPT-2 or the Llama lineage: SPEC §7) with torch.nn.functional and computes every
#    statistic with whole-tensor torch operations, batched over samples and heads: what a
#    researcher writes in an afternoon, not tuned.
#  - a second, independent check of the counts: --check compares every dataset of the store with
#    its own: the integer aggregates of /stats, their per-unit sums in /units, /per_sample and the
#    examples' selected pairs exactly; anchor_share and the examples' float16 matrices within their
#    rounding; /samples and /vocab are its inputs. A dataset it does not know fails the check, so a
#    statistic added to ctxsim and not here cannot pass unseen. Count for count needs float64 on
#    both sides (SPEC §4: in float32, near-ties move pairs across a selection boundary).
# Run with Debian's python (the one with torch, numpy, h5py, yaml):
#   build/ctxsim run configs/default.yaml samples.num_samples=32 model.dtype=float64 \
#       statistics.examples=[] output.report=false output.dir=/tmp/tp/def64
#   /usr/bin/python3 scripts/torch_pipeline.py --store /tmp/tp/def64/store.h5 --dtype float64 --check
#   /usr/bin/python3 scripts/torch_pipeline.py --store STORE --batch 8 --dtype float32 --threads 2
#   /usr/bin/python3 scripts/torch_pipeline.py --model data/models/bert-base-seed0 --forward-only --seq-len 128
# --model defaults to the store's model_path (relative to the repository root).
import time
T_START = time.perf_counter()

import argparse
import json
import math
import os
import struct
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F
try:
    import yaml
except ImportError:
    yaml = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Each family's special tokens (SPEC §7): never a repeated token.
SPECIALS = {"bert": ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], "roberta": ["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
            "gpt2": ["<|endoftext|>"]}
# What a family's checkpoint names differently: the encoder's prefix in task-head files, and the
# task heads and buffers that are not the encoder's.
# The sample frame's tokens by role (begin, end, pad; GPT-2 has no end token): BERT's spellings
# [CLS] [SEP] [PAD] name them in a separator list of any family.
FRAME = {"bert": ("[CLS]", "[SEP]", "[PAD]"), "roberta": ("<s>", "</s>", "<pad>"), "gpt2": ("<|endoftext|>", None, "<|endoftext|>")}
BYTE_LEVEL = {"roberta", "gpt2"}
PREFIX = {"bert": "bert.", "roberta": "roberta.", "gpt2": "transformer."}
SKIP = {"bert": ("cls.", "pooler."), "roberta": ("lm_head.", "pooler."), "gpt2": ("lm_head.",)}
# The Llama lineage (SPEC §7): one layout, its frame and specials from the folder's
# tokenizer_config.json (lineage_tokens below).
LINEAGE = ("llama", "mistral", "qwen2", "qwen3")
for _f in LINEAGE:
    BYTE_LEVEL.add(_f)
    PREFIX[_f], SKIP[_f] = "model.", ("lm_head.",)
FIXED_POINT_SCALE = 2.0 ** 32
RANK_GRID = 2.0 ** 16  # a sample's effective rank is put on this grid before it is summed (SPEC §9)


# ---------------------------------------------------------------- checkpoint and forward

def load_checkpoint(folder, dtype):
    """config.json + model.safetensors -> (config dict, {bare model name: tensor}) for BERT,
    RoBERTa (RobertaModel's names), GPT-2 (GPT2Model's) and the Llama lineage (LlamaModel's)."""
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(folder, "model.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = bytearray(os.path.getsize(f.name) - 8 - n)
        f.readinto(data)
    kinds = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64}
    weights = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        family = cfg.get("model_type", "bert")
        if name.startswith(PREFIX[family]):
            name = name[len(PREFIX[family]):]
        if name.startswith(SKIP[family]) or name.endswith((".attn.bias", ".attn.masked_bias")) or "position_ids" in name \
                or "token_type_ids" in name:
            continue
        name = name.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")
        start, end = info["data_offsets"]
        kind = kinds[info["dtype"]]
        count = (end - start) // torch.tensor([], dtype=kind).element_size()
        t = torch.frombuffer(data, dtype=kind, count=count, offset=start) if count else torch.empty(0, dtype=kind)
        weights[name] = t.reshape(info["shape"]).to(dtype)  # shares `data` when the dtype matches
    return cfg, weights


def activation(name):
    if name == "gelu":
        return F.gelu
    if name in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        return lambda x: F.gelu(x, approximate="tanh")
    if name == "relu":
        return F.relu
    raise SystemExit(f"unsupported hidden_act {name}")


def forward(cfg, w, ids, valid, per_layer=None):
    """The model's forward: a plain BERT encoder (RoBERTa: its positions), or GPT-2's decoder.
    ids, valid: [B, T]. per_layer(l, A [B,H,T,T], ctx [B,H,T,d], W_O [D, D] as nn.Linear) is called
    for each layer with the attention map and the head context vectors (before W_O)."""
    if cfg.get("model_type") == "gpt2":
        return gpt2_forward(cfg, w, ids, valid, per_layer)
    if cfg.get("model_type") in LINEAGE:
        return lineage_forward(cfg, w, ids, valid, per_layer)
    B, T = ids.shape
    H = cfg["num_attention_heads"]
    D = cfg["hidden_size"]
    d = D // H
    eps = cfg.get("layer_norm_eps", 1e-12)
    act = activation(cfg.get("hidden_act", "gelu"))
    e = "embeddings."
    if cfg.get("model_type") == "roberta":  # positions count the non-padding tokens from padding_idx + 1
        pad = cfg.get("pad_token_id", 1)
        keep = (ids != pad).long()
        positions = torch.cumsum(keep, dim=1) * keep + pad
    else:
        positions = torch.arange(T).view(1, T)
    x = w[e + "word_embeddings.weight"][ids] + w[e + "position_embeddings.weight"][positions] + w[e + "token_type_embeddings.weight"][0]
    x = F.layer_norm(x, (D,), w[e + "LayerNorm.weight"], w[e + "LayerNorm.bias"], eps)
    mask = torch.zeros(B, 1, 1, T, dtype=x.dtype)
    mask.masked_fill_(~valid.view(B, 1, 1, T), torch.finfo(x.dtype).min)
    for l in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{l}."
        heads = lambda t: t.view(B, T, H, d).transpose(1, 2)  # [B, H, T, d]
        q = heads(F.linear(x, w[p + "attention.self.query.weight"], w[p + "attention.self.query.bias"]))
        k = heads(F.linear(x, w[p + "attention.self.key.weight"], w[p + "attention.self.key.bias"]))
        v = heads(F.linear(x, w[p + "attention.self.value.weight"], w[p + "attention.self.value.bias"]))
        A = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d) + mask, dim=-1)
        ctx = A @ v
        if per_layer is not None:
            per_layer(l, A, ctx, w[p + "attention.output.dense.weight"])
        a = F.linear(ctx.transpose(1, 2).reshape(B, T, D), w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"])
        x = F.layer_norm(a + x, (D,), w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], eps)
        hmid = act(F.linear(x, w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"]))
        o = F.linear(hmid, w[p + "output.dense.weight"], w[p + "output.dense.bias"])
        x = F.layer_norm(o + x, (D,), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    return x


def gpt2_forward(cfg, w, ids, valid, per_layer=None):
    """GPT-2 (SPEC §7): learned positions from 0, pre-LayerNorm blocks, Conv1D weights ([in, out]:
    x @ W + b), one fused c_attn, causal attention (no key after the query) over the valid keys,
    gelu_new, a final ln_f."""
    B, T = ids.shape
    H, D = cfg["n_head"], cfg["n_embd"]
    d = D // H
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    act = activation(cfg.get("activation_function", "gelu_new"))
    x = w["wte.weight"][ids] + w["wpe.weight"][:T]
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool)).view(1, 1, T, T) & valid.view(B, 1, 1, T)
    floor = torch.finfo(x.dtype).min
    for l in range(cfg["n_layer"]):
        p = f"h.{l}."
        h = F.layer_norm(x, (D,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        heads = lambda t: t.view(B, T, H, d).transpose(1, 2)
        q, k, v = (heads(t) for t in qkv.split(D, dim=-1))
        A = torch.softmax((q @ k.transpose(-1, -2) / math.sqrt(d)).masked_fill(~allowed, floor), dim=-1)
        ctx = A @ v
        if per_layer is not None:
            per_layer(l, A, ctx, w[p + "attn.c_proj.weight"].t())
        x = x + ctx.transpose(1, 2).reshape(B, T, D) @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = F.layer_norm(x, (D,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        x = x + act(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"]) @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    return F.layer_norm(x, (D,), w["ln_f.weight"], w["ln_f.bias"], eps)


def lineage_forward(cfg, w, ids, valid, per_layer=None):
    """The Llama lineage (SPEC §7): RMSNorm before each block, rotary positions in the rotate_half
    layout (the default rope; pairs (i, i + d/2)), grouped-query attention (query head h reads
    key/value head h // (H / H_kv)), Qwen2's q/k/v biases and Qwen3's per-head q/k RMSNorm where
    the checkpoint has them, causal attention over the valid keys, SwiGLU, a final norm."""
    if (cfg.get("rope_scaling") or {}).get("rope_type", "default") != "default" or cfg.get("sliding_window"):
        raise SystemExit("torch_pipeline.py: the default rope and no sliding window only")
    B, T = ids.shape
    H, D = cfg["num_attention_heads"], cfg["hidden_size"]
    Hkv = cfg.get("num_key_value_heads") or H
    d = cfg.get("head_dim") or D // H
    eps = cfg.get("rms_norm_eps", 1e-6)
    theta = cfg.get("rope_theta") or (cfg.get("rope_parameters") or {}).get("rope_theta", 10000.0)
    rms = lambda x, weight: weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    angles = torch.arange(T, dtype=torch.float64).view(T, 1) * inv_freq.view(1, -1)
    cos, sin = (torch.cat((f, f), dim=-1).to(w["embed_tokens.weight"].dtype) for f in (angles.cos(), angles.sin()))
    rotate = lambda t: t * cos + torch.cat((-t[..., d // 2:], t[..., :d // 2]), dim=-1) * sin
    x = w["embed_tokens.weight"][ids]
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool)).view(1, 1, T, T) & valid.view(B, 1, 1, T)
    floor = torch.finfo(x.dtype).min
    for l in range(cfg["num_hidden_layers"]):
        p = f"layers.{l}."
        h = rms(x, w[p + "input_layernorm.weight"])
        proj = lambda name, n: F.linear(h, w[p + f"self_attn.{name}.weight"], w.get(p + f"self_attn.{name}.bias")).view(B, T, n, d).transpose(1, 2)
        q, k, v = proj("q_proj", H), proj("k_proj", Hkv), proj("v_proj", Hkv)
        if p + "self_attn.q_norm.weight" in w:
            q, k = rms(q, w[p + "self_attn.q_norm.weight"]), rms(k, w[p + "self_attn.k_norm.weight"])
        q, k = rotate(q), rotate(k)
        k, v = k.repeat_interleave(H // Hkv, dim=1), v.repeat_interleave(H // Hkv, dim=1)
        A = torch.softmax((q @ k.transpose(-1, -2) / math.sqrt(d)).masked_fill(~allowed, floor), dim=-1)
        ctx = A @ v
        if per_layer is not None:
            per_layer(l, A, ctx, w[p + "self_attn.o_proj.weight"])
        x = x + F.linear(ctx.transpose(1, 2).reshape(B, T, H * d), w[p + "self_attn.o_proj.weight"])
        h = rms(x, w[p + "post_attention_layernorm.weight"])
        x = x + F.linear(F.silu(F.linear(h, w[p + "mlp.gate_proj.weight"])) * F.linear(h, w[p + "mlp.up_proj.weight"]), w[p + "mlp.down_proj.weight"])
    return rms(x, w["norm.weight"])


def lineage_tokens(folder):
    """The Llama lineage's frame and specials from tokenizer_config.json (SPEC §7): bos_token
    (none when null), pad_token or else eos_token; specials the three."""
    path = os.path.join(folder, "tokenizer_config.json")
    c = json.load(open(path)) if os.path.exists(path) else {}
    token = lambda key: (c.get(key) or {}).get("content") if isinstance(c.get(key), dict) else c.get(key)
    bos, pad, eos = token("bos_token"), token("pad_token"), token("eos_token")
    return (bos, None, pad or eos), [t for t in (bos, pad, eos) if t]


# ---------------------------------------------------------------- statistics (SPEC §3-4)

# ---------------------------------------------------------------- the peer users would pick

def transformers_forward(folder, dtype):
    """What a user of Hugging Face transformers writes to get the same inputs: the model loaded
    with eager attention (the only kind that returns its maps), the per-head context vectors taken
    by a forward pre-hook on each layer's output projection (its input is the heads' outputs,
    concatenated), the attention maps by a forward hook on each attention module. Returns a
    forward(cfg, w, ids, valid, per_layer) like the plain ones, and the model's config dict."""
    os.environ.setdefault("TQDM_DISABLE", "1")  # the GGUF loader's own progress bar
    import transformers
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    if folder.endswith(".gguf"):  # a llama.cpp file: transformers dequantises it (with the gguf package)
        m = transformers.AutoModel.from_pretrained(os.path.dirname(folder), gguf_file=os.path.basename(folder),
                                                   attn_implementation="eager", dtype=dtype).eval()
    else:
        m = transformers.AutoModel.from_pretrained(folder, attn_implementation="eager", dtype=dtype).eval()
    family = m.config.model_type
    if family in ("bert", "roberta"):
        blocks = [(b.attention.self, b.attention.output.dense) for b in m.encoder.layer]
    elif family == "gpt2":
        blocks = [(b.attn, b.attn.c_proj) for b in m.h]
    else:  # the Llama lineage
        blocks = [(b.self_attn, b.self_attn.o_proj) for b in m.layers]
    H = m.config.num_attention_heads
    got = {}
    for l, (attention, projection) in enumerate(blocks):
        attention.register_forward_hook(lambda mod, args, out, l=l: got.__setitem__(("A", l), out[1]))
        projection.register_forward_pre_hook(lambda mod, args, l=l: got.__setitem__(("ctx", l), args[0]))

    def forward(cfg, w, ids, valid, per_layer=None):
        got.clear()
        m(input_ids=ids, attention_mask=valid.long())
        if per_layer is None:
            return
        for l, (attention, projection) in enumerate(blocks):
            ctx = got[("ctx", l)]
            B, T, D = ctx.shape
            W_O = projection.weight if family != "gpt2" else projection.weight.t()  # GPT-2's Conv1D is [in, out]
            per_layer(l, got[("A", l)], ctx.view(B, T, H, D // H).transpose(1, 2), W_O)
    return forward, m.config.to_dict()


def round_half_away(x):
    q = math.floor(x)
    return q + (1 if x - q >= 0.5 else 0)


def read_rules(store):
    """The store's rules: (name, kind, value, beta, separator names) from /stats; a rule's own
    attention threshold and separators (a folded sweep) from the config's `selection` list."""
    att = store["stats/attention"].attrs
    beta0 = float(att["attention_threshold"])
    seps0 = att["separators"].decode().split("\n")
    config = yaml.safe_load(store.attrs["config"].decode()) if yaml else {}
    listed = [r for r in config.get("selection") or [] if isinstance(r, dict)]
    rules = []
    for name in store["stats"].attrs["rules"].decode().split("\n"):
        g = store["stats"][name]
        kind, value = g.attrs["kind"].decode(), float(g.attrs["value"])
        beta, seps = beta0, seps0
        own = [r for r in listed if r.get(kind) is not None and float(r[kind]) == value]
        if own:
            beta = float(own[0].get("attention_threshold", beta0))
            seps = [str(x) for x in own[0].get("separators", seps0)]
        else:  # no YAML: the name says it (6 significant digits)
            for part in name.split(",")[1:]:
                if part.startswith("beta="):
                    beta = float(part[5:])
                elif part.startswith("separators="):
                    seps = part[len("separators="):].split("|")
        rules.append((name, kind, value, beta, seps))
    return rules


def select(C, valid_pairs, n_pairs, kind, value):
    """Selected pairs [B,H,T,T] (bool, i < j) of one rule. C: [B,H,T,T], valid_pairs: [B,1,T,T]."""
    B, H, T, _ = C.shape
    if kind == "top_fraction":
        k = torch.tensor([min(P, max(1, round_half_away(value * P))) if P else 0 for P in n_pairs.tolist()])
        i, j = torch.triu_indices(T, T, 1)  # the pairs i < j in (i, j) order
        upper = C[..., i, j].masked_fill(~valid_pairs[..., i, j], -math.inf)  # [B,H,T(T-1)/2]
        order = torch.sort(upper, dim=-1, descending=True, stable=True).indices  # ties: smaller i, then j
        kmax = int(k.max())
        take = (torch.arange(kmax).view(1, 1, kmax) < k.view(B, 1, 1)).expand(B, H, kmax)
        S = torch.zeros(B, H, T, T, dtype=torch.bool)
        S[..., i, j] = torch.zeros_like(upper, dtype=torch.bool).scatter_(2, order[..., :kmax], take)
        return S
    Cd = C.double()
    if kind == "relative_to_max":
        cmax = Cd.masked_fill(~valid_pairs, -math.inf).amax(dim=(2, 3), keepdim=True)
        return (Cd >= value * cmax) & (cmax > 0) & valid_pairs
    if kind == "absolute":
        return (Cd >= value) & valid_pairs
    raise SystemExit(f"unknown selection rule {kind}")


class Stats:
    # The first rule's counts alone (MINIMAL) with minimal=True: the transformers peer's work.
    MINIMAL = ("high_pairs", "distance_hist", "same_sentence", "sentence_eligible")

    def __init__(self, rules, L, H, T, V, N, sep_ids, special_ids, vector, examples=(), minimal=False):
        self.rules, self.L, self.H, self.T, self.V = rules, L, H, T, V
        self.minimal = minimal
        self.sep_ids, self.special_ids, self.vector = sep_ids, special_ids, vector
        z = lambda *s: torch.zeros(*s, dtype=torch.long)
        self.out = {}
        for name, *_ in rules:
            for key in ["high_pairs", "same_sentence", "sentence_eligible", "same_token", "same_word", "in_attention", "anchor_pairs",
                        "noise", "samples_with_pairs", "high_attention_all", "separator_mass", "effective_rank",
                        "effective_rank_samples", "first_token_mass"]:
                self.out[f"stats/{name}/{key}"] = z(L, H)
            self.out[f"stats/{name}/distance_hist"] = z(L, H, T)
            self.out[f"stats/{name}/distinct_anchors"] = z(L)
            self.out[f"stats/{name}/anchor_counts"] = z(L, H, V)
        b = "stats/baseline/"
        for key in ["samples", "valid_pairs", "same_sentence_all", "sentence_eligible_all", "same_token_all", "same_word_all"]:
            self.out[b + key] = z(())
        self.out[b + "distance_all"] = z(T)
        self.out[b + "separator_mass_by_token"] = z(L, H, len(sep_ids))
        self.anchor_token = torch.full((len(rules), N, L, H), -1, dtype=torch.int32)
        self.anchor_share = torch.zeros(len(rules), N, L, H, dtype=torch.float64)
        self.high_pairs = torch.zeros(len(rules), N, L, H, dtype=torch.int32)
        # the example samples' matrices: sample id -> its row in /examples
        self.examples = {int(n): e for e, n in enumerate(examples)}
        E = len(self.examples)
        self.ex_selected = torch.zeros(E, len(rules), L, H, T, T, dtype=torch.uint8)
        self.ex_attention = torch.zeros(E, L, H, T, T, dtype=torch.float64)
        self.ex_similarity = torch.zeros(E, L, H, T, T, dtype=torch.float64)
        self.distance = (torch.arange(T).view(1, T) - torch.arange(T).view(T, 1)).clamp_min(0)  # [T,T]: j - i

    def begin_batch(self, first, tok, sid, wid, nv):
        """Per-batch masks and the rule-independent baselines. tok, sid, wid: [B,T] long; nv: [B]."""
        B, T = tok.shape
        self.first, self.tok, self.nv = first, tok, nv
        pos = torch.arange(T)
        self.valid = pos.view(1, T) < nv.view(B, 1)
        vp = self.valid.view(B, T, 1) & self.valid.view(B, 1, T) & (pos.view(T, 1) < pos.view(1, T))
        self.valid_pairs = vp.view(B, 1, T, T)
        self.n_pairs = vp.sum(dim=(1, 2))
        insent = sid >= 0
        eligible = insent.view(B, T, 1) & insent.view(B, 1, T)
        self.eligible = eligible.view(B, 1, T, T)
        self.same_sentence = (eligible & (sid.view(B, T, 1) == sid.view(B, 1, T))).view(B, 1, T, T)
        special = torch.isin(tok, torch.tensor(self.special_ids))
        self.same_token = ((tok.view(B, T, 1) == tok.view(B, 1, T)) & ~special.view(B, T, 1)).view(B, 1, T, T)
        self.same_word = ((wid.view(B, T, 1) == wid.view(B, 1, T)) & (wid >= 0).view(B, T, 1)).view(B, 1, T, T)
        # token ids -> rank among the batch's sorted distinct ids, for the anchor counts
        self.uniq, self.rank = torch.unique(tok, sorted=True, return_inverse=True)
        self.seps = torch.stack([tok == s for s in self.sep_ids], dim=-1).double() if self.sep_ids else None  # [B,T,S]
        b = "stats/baseline/"
        o = self.out
        o[b + "samples"] += B
        o[b + "valid_pairs"] += self.n_pairs.sum()
        o[b + "distance_all"].scatter_add_(0, self.distance.flatten(), vp.sum(0).flatten().long())
        o[b + "same_sentence_all"] += (self.same_sentence & self.valid_pairs).sum()
        o[b + "sentence_eligible_all"] += (self.eligible & self.valid_pairs).sum()
        o[b + "same_token_all"] += (self.same_token & self.valid_pairs).sum()
        o[b + "same_word_all"] += (self.same_word & self.valid_pairs).sum()

    def layer(self, l, A, ctx, W_O=None):
        B, H, T, d = ctx.shape
        o = self.out
        vp = self.valid_pairs
        if self.vector == "projected":  # o_i W_O[h]: the head's slice of the output projection
            ctx = torch.einsum("bhtd,ehd->bhte", ctx, W_O.view(-1, H, d))
        C = ctx @ ctx.transpose(-1, -2)  # diagonal and [PAD] never enter: selection is over valid i < j
        if self.minimal:  # the first rule's selection, its distances and same-sentence counts
            name, kind, value = self.rules[0][:3]
            p = f"stats/{name}/"
            S = select(C, vp, self.n_pairs, kind, value)
            o[p + "high_pairs"][l] += S.sum(dim=(0, 2, 3))
            o[p + "distance_hist"][l].scatter_add_(1, self.distance.flatten().expand(H, T * T), S.sum(0).view(H, T * T).long())
            o[p + "same_sentence"][l] += (S & self.same_sentence).sum(dim=(0, 2, 3))
            o[p + "sentence_eligible"][l] += (S & self.eligible).sum(dim=(0, 2, 3))
            return
        A_sym = torch.maximum(A, A.transpose(-1, -2)).double()
        # attention mass on each separator token: mean over valid rows, fixed point, per sample
        by_token = None
        if self.seps is not None:
            rows = self.valid.double().view(B, 1, T, 1)
            mass = ((A.double() @ self.seps.unsqueeze(1)) * rows).sum(2)  # [B,H,S]
            by_token = torch.round(mass / self.nv.clamp_min(1).double().view(B, 1, 1) * FIXED_POINT_SCALE).long()
            o["stats/baseline/separator_mass_by_token"][l] += by_token.sum(0)
        # effective rank (SPEC §9): (tr G)^2 / |G|_F^2 of the valid rows' Gram matrix, every entry of
        # it, each sample's on the grid 2^-16 in units of 2^-32
        vv = (self.valid.view(B, 1, T, 1) & self.valid.view(B, 1, 1, T)).double()
        G = C.double() * vv
        trace, square = G.diagonal(dim1=-2, dim2=-1).sum(-1), (G * G).sum(dim=(2, 3))  # [B,H]
        ranked = square > 0
        rank = torch.where(ranked, torch.round(trace * trace / square.clamp_min(1e-300) * RANK_GRID), torch.zeros_like(square)).long()
        rank = rank * int(FIXED_POINT_SCALE / RANK_GRID)
        # attention on the first position (the sink): mean over valid rows, fixed point
        first = torch.round((A[:, :, :, 0].double() * self.valid.double().view(B, 1, T)).sum(2) / self.nv.clamp_min(1).double().view(B, 1)
                            * FIXED_POINT_SCALE).long()
        count_pairs = lambda S: S.sum(dim=(2, 3))  # [B,H] pair counts
        for r, (name, kind, value, beta, seps) in enumerate(self.rules):
            p = f"stats/{name}/"
            S = select(C, vp, self.n_pairs, kind, value)
            hp = count_pairs(S)
            high_att = (A_sym >= beta) & vp
            o[p + "high_pairs"][l] += hp.sum(0)
            o[p + "distance_hist"][l].scatter_add_(1, self.distance.flatten().expand(H, T * T), S.sum(0).view(H, T * T).long())
            o[p + "same_sentence"][l] += count_pairs(S & self.same_sentence).sum(0)
            o[p + "sentence_eligible"][l] += count_pairs(S & self.eligible).sum(0)
            o[p + "same_token"][l] += count_pairs(S & self.same_token).sum(0)
            o[p + "same_word"][l] += count_pairs(S & self.same_word).sum(0)
            o[p + "in_attention"][l] += count_pairs(S & high_att).sum(0)
            o[p + "high_attention_all"][l] += count_pairs(high_att).sum(0)
            o[p + "effective_rank"][l] += rank.sum(0)
            o[p + "effective_rank_samples"][l] += ranked.long().sum(0)
            o[p + "first_token_mass"][l] += first.sum(0)
            if by_token is not None:  # seps: the rule's separators, as indices into sep_ids
                o[p + "separator_mass"][l] += by_token[:, :, seps].sum(2).sum(0)
            # anchor: endpoint counts per token id, the first maximum (= the smaller id)
            degree = S.sum(3) + S.sum(2)  # [B,H,T]
            counts = torch.zeros(B, H, len(self.uniq), dtype=torch.long)
            counts.scatter_add_(2, self.rank.view(B, 1, T).expand(B, H, T), degree)
            anchor = torch.where(hp > 0, self.uniq[counts.argmax(dim=2)], torch.full_like(hp, -1))  # [B,H]
            share = torch.where(hp > 0, counts.max(dim=2).values.double() / (2 * hp).clamp_min(1).double(), torch.zeros_like(hp).double())
            is_anchor = self.tok.view(B, 1, T) == anchor.view(B, H, 1)
            touch = S & (is_anchor.view(B, H, T, 1) | is_anchor.view(B, H, 1, T))
            o[p + "anchor_pairs"][l] += count_pairs(touch).sum(0)
            o[p + "noise"][l] += count_pairs(S & ~self.same_sentence & ~self.same_token & ~touch).sum(0)
            o[p + "samples_with_pairs"][l] += (hp > 0).sum(0)
            srt = anchor.sort(dim=1).values
            distinct = (srt >= 0).sum(1) - ((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)).sum(1)
            o[p + "distinct_anchors"][l] += distinct.sum()
            has = anchor >= 0
            heads = torch.arange(H).view(1, H).expand(B, H)
            o[p + "anchor_counts"][l].index_put_((heads[has], anchor[has]), torch.ones(int(has.sum()), dtype=torch.long), accumulate=True)
            self.anchor_token[r, self.first:self.first + B, l] = anchor.int()
            self.anchor_share[r, self.first:self.first + B, l] = share
            for b in range(B):
                e = self.examples.get(self.first + b)
                if e is not None:
                    self.ex_selected[e, r, l] = S[b].to(torch.uint8)
                    if r == 0:
                        n = int(self.nv[b])
                        self.ex_attention[e, l] = A[b].double()
                        sim = C[b].double().clone()
                        sim[:, n:, :] = 0
                        sim[:, :, n:] = 0
                        sim.diagonal(dim1=-2, dim2=-1).zero_()
                        self.ex_similarity[e, l] = sim
            self.high_pairs[r, self.first:self.first + B, l] = hp.int()


# ---------------------------------------------------------------- main

def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def main():
    ap = argparse.ArgumentParser(description="A plain PyTorch implementation of `ctxsim run` (benchmark yardstick, count check).")
    ap.add_argument("--model", help="Hugging Face BERT folder (default: the store's model_path)")
    ap.add_argument("--store", help="a ctxsim store.h5: its samples, rules and (with --check) its statistics")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--check", action="store_true", help="compare every integer aggregate with the store's")
    ap.add_argument("--forward-only", action="store_true", help="time the plain forward alone")
    ap.add_argument("--seconds", type=float, default=10.0, help="--forward-only: how long to time after a warm-up")
    ap.add_argument("--seq-len", type=int, default=128, help="--forward-only without --store: synthetic ids of this length")
    ap.add_argument("--transformers", action="store_true",
                    help="the forward through Hugging Face transformers with hooks (run with the project venv's python)")
    ap.add_argument("--minimal", action="store_true",
                    help="only the first rule's selection and its distance and same-sentence counts (--check compares those)")
    args = ap.parse_args()
    if not args.store and not (args.forward_only and args.model):
        ap.error("--store is required (or --forward-only with --model)")
    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)

    store = h5py.File(args.store, "r") if args.store else None
    model = args.model or os.path.join(ROOT, store.attrs["model_path"].decode())
    if args.transformers:
        model_forward, cfg = transformers_forward(model, dtype)
        w = None
    else:
        model_forward = forward
        cfg, w = load_checkpoint(model, dtype)
    if store is not None:
        ids = torch.from_numpy(store["samples/token_ids"][...].astype(np.int64))
        nv = torch.from_numpy(store["samples/n_valid"][...].astype(np.int64))
    else:
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(1000, 2000, (max(args.batch, 64), args.seq_len), generator=g)
        nv = torch.full((ids.shape[0],), args.seq_len, dtype=torch.long)
    N, T = ids.shape
    print(f"cpu: {cpu_model()}")
    if args.transformers:
        import transformers
        print(f"transformers {transformers.__version__}, torch {torch.__version__} (kernels {torch.backends.cpu.get_cpu_capability()},"
              f" MKL {torch.backends.mkl.is_available()}, MKL_ENABLE_INSTRUCTIONS={os.environ.get('MKL_ENABLE_INSTRUCTIONS', 'unset')}),"
              f" threads {torch.get_num_threads()}")
    else:
        print(f"torch {torch.__version__}, BLAS {os.path.realpath('/usr/lib/x86_64-linux-gnu/libblas.so.3')}"
              f" (OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}), threads {torch.get_num_threads()}")
    shape = [cfg.get(k, cfg.get(alt)) for k, alt in (("num_hidden_layers", "n_layer"), ("num_attention_heads", "n_head"), ("hidden_size", "n_embd"))]
    print(f"model {model} ({cfg.get('model_type', 'bert')}): {shape[0]} layers, {shape[1]} heads, hidden {shape[2]};"
          f" dtype {args.dtype}, batch {args.batch}, T={T}")

    if args.forward_only:  # full-length samples: every position valid
        if store is not None:
            nv = torch.full((N,), T, dtype=torch.long)
        batch = lambda i: (ids[i:i + args.batch], torch.arange(T).view(1, T) < nv[i:i + args.batch].view(-1, 1))
        with torch.inference_mode():
            starts = list(range(0, N - args.batch + 1, args.batch)) or [0]
            model_forward(cfg, w, *batch(0))  # warm-up
            done, t0, i = 0, time.perf_counter(), 0
            while time.perf_counter() - t0 < args.seconds:
                x, v = batch(starts[i % len(starts)])
                model_forward(cfg, w, x, v)
                done, i = done + x.shape[0], i + 1
            dt = time.perf_counter() - t0
        print(f"forward only: {done} samples in {dt:.2f} s = {done / dt:.2f} samples/s")
        return

    # the store's rules, separators and special ids
    vocab = store["vocab/text"][...].tobytes().decode("utf-8").split("\n")
    name_to_id = {}
    for i, t in enumerate(vocab):
        name_to_id.setdefault(t, i)
    sep_names = [s for s in store["stats/attention"].attrs["separator_tokens"].decode().split("\n") if s]
    def spellings(name):  # a configured separator -> the tokens it names (SPEC §7)
        if name not in name_to_id and name in FRAME["bert"]:
            role = FRAME[family][FRAME["bert"].index(name)]
            return [role] if role else []
        spaced = "\u0120" + name  # byte-level BPE: a token after a space ("Ġ,")
        return [name] + ([spaced] if family in BYTE_LEVEL and not name.startswith("\u0120") and spaced in name_to_id else [])
    family = cfg.get("model_type", "bert")
    if family in LINEAGE:
        FRAME[family], SPECIALS[family] = lineage_tokens(model)
    rules = [(name, kind, value, beta, [sep_names.index(t) for s in seps if s for t in spellings(s)])
             for name, kind, value, beta, seps in read_rules(store)]
    vector = store.attrs["vector"].decode() if "vector" in store.attrs else "context"
    L, H = cfg.get("num_hidden_layers", cfg.get("n_layer")), cfg.get("num_attention_heads", cfg.get("n_head"))
    examples = store["examples/sample_ids"][...] if "examples/sample_ids" in store else ()
    stats = Stats(rules, L, H, T, cfg["vocab_size"], N, [name_to_id[s] for s in sep_names],
                  [name_to_id[s] for s in SPECIALS[family] if s in name_to_id], vector, examples, args.minimal)
    sid = torch.from_numpy(store["samples/sentence_ids"][...].astype(np.int64))
    wid = torch.from_numpy(store["samples/word_ids"][...].astype(np.int64)) if "samples/word_ids" in store else torch.full_like(sid, -1)
    # Work units (DESIGN: fixed runs of runtime.unit_size samples): the per-unit sums of /units,
    # every aggregate but the [L, H, V] ones. Batches never cross a unit's end.
    unit_size = int(yaml.safe_load(store.attrs["config"].decode())["runtime"]["unit_size"]) if yaml else N
    per_unit = [k for k, v in stats.out.items() if not k.endswith("/anchor_counts")]
    units = {k: [] for k in per_unit}

    t0 = time.perf_counter()
    with torch.inference_mode():
        for unit in range(0, N, unit_size):
            before = {k: stats.out[k].clone() for k in per_unit}
            for first in range(unit, min(N, unit + unit_size), args.batch):
                last = min(first + args.batch, unit + unit_size, N)
                x, s, wd, n = ids[first:last], sid[first:last], wid[first:last], nv[first:last]
                stats.begin_batch(first, x, s, wd, n)
                valid = torch.arange(T).view(1, T) < n.view(-1, 1)
                model_forward(cfg, w, x, valid, stats.layer)
            for k in per_unit:
                units[k].append(stats.out[k] - before[k])
    t_loop = time.perf_counter() - t0
    t_all = time.perf_counter() - T_START
    print(f"compute loop: {N} samples in {t_loop:.2f} s = {N / t_loop:.2f} samples/s")
    print(f"whole script: {N} samples in {t_all:.2f} s = {N / t_all:.2f} samples/s (from the script's start, imports and load included)")

    if args.check:
        sys.exit(check_minimal(store, stats, units) if args.minimal else check(store, stats, units))


def check_minimal(store, stats, units):
    """--minimal: the first rule's counts (Stats.MINIMAL) and their per-unit sums, exactly."""
    rule = stats.rules[0][0]
    bad = 0
    for key in Stats.MINIMAL:
        for name, ours in ((f"stats/{rule}/{key}", stats.out[f"stats/{rule}/{key}"]),
                           (f"units/{rule}/{key}", torch.stack(units[f"stats/{rule}/{key}"]))):
            theirs = torch.from_numpy(np.asarray(store[name][...]).astype(np.int64))
            n = int((ours.long().reshape(theirs.shape) != theirs).sum())
            bad += n > 0
            print(f"check {name}: " + ("equal" if n == 0 else f"{n} of {theirs.numel()} entries differ"))
    print("check: all equal" if bad == 0 else f"check: {bad} datasets differ")
    return 1 if bad else 0


def check(store, stats, units):
    """Every dataset of the store against ours: 0 when all agree, else 1. Exact for integers; the
    float ones within their rounding; /samples and /vocab are our inputs; dimension scales carry
    coordinates. Any other dataset fails: nothing the store holds goes unchecked."""
    exact = dict(stats.out)
    for k, parts in units.items():
        exact["units/" + k[len("stats/"):]] = torch.stack(parts)
    exact["per_sample/anchor_token"] = stats.anchor_token
    exact["per_sample/high_pairs"] = stats.high_pairs
    exact["examples/selected"] = stats.ex_selected
    close = {"per_sample/anchor_share": (stats.anchor_share, 1e-6, None),        # float32 of an exact ratio
             "examples/attention": (stats.ex_attention, 2e-3, None),           # float16: 2^-11 relative, weights <= 1
             "examples/similarity": (stats.ex_similarity, 2e-3, "scale")}      # float16, relative to the matrix's largest
    inputs = ("samples/", "vocab/", "examples/sample_ids")  # what it reads
    n_valid = store["samples/n_valid"][...]
    ex_ids = store["examples/sample_ids"][...] if "examples/sample_ids" in store else []
    bad, unknown, compared = 0, [], 0
    names = []
    store.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
    print(f"check against the store ({store.attrs['dtype'].decode()}, {int(store['stats/baseline/samples'][()])} samples)")
    for key in sorted(names):
        ds = store[key]
        if ds.attrs.get("CLASS") == b"DIMENSION_SCALE" or key.startswith(inputs):
            continue
        if key in exact:
            theirs = torch.from_numpy(np.asarray(ds[...]).astype(np.int64))
            ours = exact[key].long().reshape(theirs.shape)
            diff = (ours != theirs).nonzero()
            compared += 1
            if len(diff) == 0:
                print(f"check {key}: equal")
                continue
            bad += 1
            at = tuple(diff[0].tolist())
            print(f"check {key}: {len(diff)} of {ours.numel()} entries differ; first at {at}: ours {int(ours[at])}, store {int(theirs[at])}")
        elif key in close:
            ours, tol, scale = close[key]
            theirs = torch.from_numpy(np.asarray(ds[...]).astype(np.float64))
            ours = ours.reshape(theirs.shape)
            worst = 0.0
            if key.startswith("examples/"):  # each example's valid rows; their [PAD] keys must hold 0
                for e, sample in enumerate(ex_ids):
                    n = int(n_valid[sample])
                    o, t = ours[e, :, :, :n, :n], theirs[e, :, :, :n, :n]
                    ref = float(t.abs().max()) if scale else 1.0
                    worst = max(worst, float((o - t).abs().max()) / max(ref, 1e-300))
                    if n < theirs.shape[-1] and float(theirs[e, :, :, :n, n:].abs().max()) != 0:
                        worst = float("inf")
            else:
                worst = float((ours - theirs).abs().max()) if ours.numel() else 0.0
            compared += 1
            if worst <= tol:
                print(f"check {key}: equal within {tol:g} (largest deviation {worst:.1e})")
            else:
                bad += 1
                print(f"check {key}: largest deviation {worst:.3e} exceeds {tol:g}")
        else:
            unknown.append(key)
    for key in unknown:
        print(f"check {key}: not compared: this script does not compute it (add it to scripts/torch_pipeline.py)")
    if bad == 0 and not unknown:
        print(f"check: all equal ({compared} datasets)")
        return 0
    print(f"check: {bad} datasets differ, {len(unknown)} not compared")
    return 1


if __name__ == "__main__":
    main()
