"""ctxsim against Hugging Face's own libraries (transformers and tokenizers, from the project venv
that scripts/setup.sh makes): the `reference` tests (tests/reference_test.sh runs each case).

  hf_reference.py families CTXSIM TMP
      For each family (BertModel, DistilBertModel, RobertaModel, GPT2Model, and the same with their
      masked-LM / LM heads, whose checkpoints name the encoder with a prefix), transformers writes a
      seeded random checkpoint (save_pretrained, small shapes, every bias and LayerNorm non-trivial,
      peaked attention); ctxsim's float64 per-head context vectors and attention maps
      (model-info --dump-heads) must equal transformers' float64 forward: the context from a forward
      pre-hook on the attention's output projection (its input: every head's o_i = sum_j A_ij v_j),
      the maps from output_attentions (eager attention); for the head classes also the head's
      logits at every valid position (what prune's losses are made of). Max relative deviation
      <= 1e-10.
  hf_reference.py minilm CTXSIM MODEL_DIR BROWN_DIR TMP
      The real all-MiniLM-L6-v2: >= 50 Brown windows of 128 tokens and >= 20 hostile strings,
      tokenized by the model's own tokenizer.json; float32 <= 1e-4, and float64 <= 1e-10.
  hf_reference.py tokenizers CTXSIM LINES TMP
      `ctxsim tokenize` against the tokenizers library, line by line (no special tokens), for
      bert-base-uncased's vocab.txt, MiniLM's folder and its tokenizer.json, GPT-2's files and a
      RoBERTa vocabulary (init-model's, from GPT-2's files).
  hf_reference.py gguf CTXSIM SMOLLM_GGUF TMP
      GGUF files: random Llamas written as llama.cpp's converter writes them, in every type ctxsim
      dequantises, against the gguf package's dequantisation (float64 <= 1e-10), and the real
      SmolLM2-135M-Instruct Q4_1 against transformers' own GGUF loading (float32 <= 1e-4).
  hf_reference.py folder CTXSIM MODEL_DIR TMP
      A folder ctxsim wrote (pretrain's export, tests/pretrain_test.sh families): transformers loads
      it as the language-model class config.json names; heads, maps and logits as for families.

The deviation of a tensor is max |ctxsim - transformers| / max |transformers| per sample and layer,
over the valid query rows (every key: attention on padding must be 0 in both).
Prints one line per model; exits 1 on the first failure.
"""
import json
import math
import os
import subprocess
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is local: never ask the hub
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np
import torch
import tokenizers
import transformers
from tokenizers import Tokenizer

torch.set_num_threads(int(os.environ.get("REFERENCE_THREADS", "2")))


def run(*argv, stdin=None):
    p = subprocess.run(list(argv), input=stdin, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAIL [reference]: {' '.join(argv[:4])} … exited {p.returncode}: {p.stderr.strip()[-600:]}")
    return p.stdout


def fail(message):
    print(f"FAIL [reference]: {message}")
    sys.exit(1)


# ------------------------------------------------------------------------------- families ------
# family: (config class, config keys, base model, model with its head, the output projection of
# layer i inside the base model)
FAMILIES = {
    "bert": (transformers.BertConfig, dict(hidden_size=60, num_hidden_layers=3, num_attention_heads=4, intermediate_size=96,
                                           max_position_embeddings=64, hidden_act="gelu"),
             transformers.BertModel, transformers.BertForMaskedLM, "encoder.layer.{}.attention.output.dense"),
    "distilbert": (transformers.DistilBertConfig, dict(dim=60, n_layers=3, n_heads=4, hidden_dim=96, max_position_embeddings=64),
                   transformers.DistilBertModel, transformers.DistilBertForMaskedLM, "transformer.layer.{}.attention.out_lin"),
    "roberta": (transformers.RobertaConfig, dict(hidden_size=60, num_hidden_layers=3, num_attention_heads=4, intermediate_size=96,
                                                 max_position_embeddings=66, pad_token_id=1, bos_token_id=0, eos_token_id=2),
                transformers.RobertaModel, transformers.RobertaForMaskedLM, "encoder.layer.{}.attention.output.dense"),
    "gpt2": (transformers.GPT2Config, dict(n_embd=60, n_layer=3, n_head=4, n_inner=96, n_positions=64, bos_token_id=999, eos_token_id=999),
             transformers.GPT2Model, transformers.GPT2LMHeadModel, "h.{}.attn.c_proj"),
    # Grouped-query attention (4 query heads on 2 key/value heads), head_dim 16 (not hidden /
    # heads), rotary positions, RMSNorm, SwiGLU, an untied lm_head.
    "llama": (transformers.LlamaConfig, dict(hidden_size=60, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                                             head_dim=16, intermediate_size=96, max_position_embeddings=64, rope_theta=500.0,
                                             tie_word_embeddings=False),
              transformers.LlamaModel, transformers.LlamaForCausalLM, "layers.{}.self_attn.o_proj"),
    # Llama's shape: a sliding window longer than the samples (exact), no head_dim key.
    "mistral": (transformers.MistralConfig, dict(hidden_size=60, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                                                 head_dim=16, intermediate_size=96, max_position_embeddings=64, sliding_window=32,
                                                 rope_theta=1000.0),
                transformers.MistralModel, transformers.MistralForCausalLM, "layers.{}.self_attn.o_proj"),
    # Llama's shape with q, k and v biases and a tied decoder.
    "qwen2": (transformers.Qwen2Config, dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=1,
                                             intermediate_size=96, max_position_embeddings=64, rope_theta=1e6, tie_word_embeddings=True),
              transformers.Qwen2Model, transformers.Qwen2ForCausalLM, "layers.{}.self_attn.o_proj"),
    # Qwen2's shape without biases, with an RMSNorm over head_dim on each head's q and k.
    "qwen3": (transformers.Qwen3Config, dict(hidden_size=60, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                                             head_dim=16, intermediate_size=96, max_position_embeddings=64, rope_theta=1e6,
                                             tie_word_embeddings=True),
              transformers.Qwen3Model, transformers.Qwen3ForCausalLM, "layers.{}.self_attn.o_proj"),
    # Llama 3.1's rope type: at theta 5e5 and head_dim 16, frequencies fall in all three of its
    # bands (kept, smoothed, divided by the factor).
    "llama (rope llama3)": (transformers.LlamaConfig, dict(hidden_size=60, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                                                         head_dim=16, intermediate_size=96, max_position_embeddings=64,
                                                         rope_parameters=dict(rope_type="llama3", rope_theta=500000.0, factor=8.0,
                                                                              low_freq_factor=1.0, high_freq_factor=4.0,
                                                                              original_max_position_embeddings=8192)),
                            transformers.LlamaModel, transformers.LlamaForCausalLM, "layers.{}.self_attn.o_proj"),
}


def float64_throughout():
    """transformers computes three things of the Llama lineage in float32 whatever the model's
    dtype (for half-precision models): RMSNorm, the rotary tables, the eager softmax. ctxsim does
    the same for float32 and bfloat16, and computes in float64 for a float64 model; so that the
    float64 comparison can be exact, those three run in float64 for float64 inputs here (the same
    arithmetic, unchanged for every other dtype)."""
    from transformers.models.llama import modeling_llama
    from transformers.models.mistral import modeling_mistral
    from transformers.models.qwen2 import modeling_qwen2
    from transformers.models.qwen3 import modeling_qwen3
    for m, prefix in ((modeling_llama, "Llama"), (modeling_mistral, "Mistral"), (modeling_qwen2, "Qwen2"), (modeling_qwen3, "Qwen3")):
        patch_float64(m, getattr(m, prefix + "RMSNorm"), getattr(m, prefix + "RotaryEmbedding"))


def patch_float64(m, norm_cls, rope_cls):
    rms = norm_cls.forward

    def rms_forward(self, h):
        if h.dtype != torch.float64:
            return rms(self, h)
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))

    rope = rope_cls.forward

    def rope_forward(self, x, position_ids):
        if x.dtype != torch.float64:
            return rope(self, x, position_ids)
        cfg = self.config
        dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        rp = cfg.rope_parameters
        inv_freq = 1.0 / (rp["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
        if rp.get("rope_type") == "llama3":  # _compute_llama3_parameters in float64
            old, low, high, factor = rp["original_max_position_embeddings"], rp["low_freq_factor"], rp["high_freq_factor"], rp["factor"]
            wavelen = 2 * math.pi / inv_freq
            scaled = torch.where(wavelen > old / low, inv_freq / factor, inv_freq)
            smooth = (old / wavelen - low) / (high - low)
            smoothed = (1 - smooth) * scaled / factor + smooth * scaled
            medium = ~(wavelen < old / high) * ~(wavelen > old / low)
            inv_freq = torch.where(medium, smoothed, scaled)
        freqs = position_ids[..., None].double() * inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos() * self.attention_scaling, emb.sin() * self.attention_scaling

    eager = m.eager_attention_forward

    def eager_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
        if query.dtype != torch.float64:
            return eager(module, query, key, value, attention_mask, scaling, dropout, **kwargs)
        k, v = m.repeat_kv(key, module.num_key_value_groups), m.repeat_kv(value, module.num_key_value_groups)
        w = torch.matmul(query, k.transpose(2, 3)) * scaling
        if attention_mask is not None:
            w = w + attention_mask
        w = torch.softmax(w, dim=-1)
        return torch.matmul(w, v).transpose(1, 2).contiguous(), w

    norm_cls.forward, rope_cls.forward, m.eager_attention_forward = rms_forward, rope_forward, eager_forward
VOCAB = 1000
# Three samples of different lengths (padding is masked), one holding id 1 (RoBERTa's padding id,
# which moves its positions); d = 60 / 4 = 15, so 1/sqrt(d) is inexact.
SAMPLES = [[2, 10, 11, 12, 13, 3], [2, 40, 41, 40, 1, 42, 43, 44, 45, 46, 47, 48, 49, 50, 3], [2, 999, 3]]


def perturb(model, generator):
    """Every parameter drawn afresh: weights N(0, 0.2^2) (peaked attention at hidden 60), biases
    N(0, 0.1^2), LayerNorm scales 1 + N(0, 0.2^2), so that a misplaced bias or epsilon shows."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator, dtype=p.dtype)
            norm = ("LayerNorm" in name or "layer_norm" in name or "layernorm" in name or ".ln_" in name or name.startswith("ln_")
                    or name.endswith("norm.weight"))
            if p.dim() == 1 and norm:
                p.copy_(1 + 0.2 * noise if name.endswith("weight") else 0.1 * noise)
            elif p.dim() == 1:
                p.copy_(0.1 * noise)
            else:
                p.copy_(0.2 * noise)


def hf_heads(model, proj, ids, n_valid):
    """transformers' per-head context vectors [B, L, H, T, d] and attention maps [B, L, H, T, T]."""
    base = model.base_model
    cfg = model.config
    H, L = cfg.num_attention_heads, cfg.num_hidden_layers  # every family's config maps these names
    contexts, hooks = [], []
    for i in range(L):
        module = base.get_submodule(proj.format(i))
        hooks.append(module.register_forward_pre_hook(lambda m, args: contexts.append(args[0].detach().clone())))
    B, T = ids.shape
    mask = (torch.arange(T).view(1, T) < n_valid.view(B, 1)).long()
    with torch.no_grad():
        out = base(input_ids=ids, attention_mask=mask, output_attentions=True)
    for h in hooks:
        h.remove()
    if len(contexts) != L or out.attentions is None or len(out.attentions) != L:
        fail(f"{type(model).__name__}: hooks saw {len(contexts)} of {L} layers, attentions {out.attentions is not None}")
    context = torch.stack([c.view(B, T, H, -1).permute(0, 2, 1, 3) for c in contexts], 1)
    attention = torch.stack(list(out.attentions), 1)
    return context, attention


def dump(ctxsim, model_dir, dtype, samples, out_dir):
    argv = [ctxsim, "model-info", model_dir, "--dtype", dtype, "--dump-heads", out_dir]
    for s in samples:
        argv += ["--ids", ",".join(str(i) for i in s)]
    info = run(*argv)
    load = lambda name: torch.from_numpy(np.load(os.path.join(out_dir, name)))
    return info, load("ids.npy"), load("n_valid.npy"), load("context.npy"), load("attention.npy")


def deviation(ours, theirs, n_valid):
    """Max over samples and layers of max |ours - theirs| / max |theirs| on the valid query rows;
    and the attention mass on padding keys in either."""
    worst = 0.0
    for b in range(ours.shape[0]):
        n = int(n_valid[b])
        for l in range(ours.shape[1]):
            o, t = ours[b, l, :, :n].double(), theirs[b, l, :, :n].double()
            worst = max(worst, float((o - t).abs().max() / t.abs().max()))
    return worst


def pad_mass(attention, n_valid):
    B, T = attention.shape[0], attention.shape[-1]
    keys = torch.arange(T).view(1, T) >= n_valid.view(B, 1)
    return float(attention.double().abs().masked_select(keys.view(B, 1, 1, 1, T).expand_as(attention)).sum())


def heads_against(label, ctxsim, path, model, proj, dtype, samples, dump_dir):
    """ctxsim's heads of the model at `path` (model-info --dump-heads in `dtype`) against the
    transformers `model`'s on the same ids: the dump's info, ids and n_valid, both attention maps,
    and the max relative deviations of the context vectors and of the maps."""
    info, ids, n_valid, context, attention = dump(ctxsim, path, dtype, samples, dump_dir)
    ref_context, ref_attention = hf_heads(model, proj, ids, n_valid)
    if ref_context.shape != context.shape or ref_attention.shape != attention.shape:
        fail(f"{label}: ctxsim's dump is {tuple(context.shape)} / {tuple(attention.shape)}, transformers' "
             f"{tuple(ref_context.shape)} / {tuple(ref_attention.shape)}")
    return (info, ids, n_valid, attention, ref_attention, deviation(context, ref_context, n_valid),
            deviation(attention, ref_attention, n_valid))


def compare(label, ctxsim, model_dir, cls, proj, dtype, samples, tmp, tolerance):
    torch_dtype = torch.float64 if dtype == "float64" else torch.float32
    model = cls.from_pretrained(model_dir, attn_implementation="eager", dtype=torch_dtype).eval()
    info, _, n_valid, attention, ref_attention, c, a = heads_against(label, ctxsim, model_dir, model, proj, dtype, samples,
                                                                     os.path.join(tmp, "dump"))
    pads = pad_mass(attention, n_valid) + pad_mass(ref_attention[:, :, :, :, :], n_valid)
    peak = float(ref_attention.max())
    return c, a, pads, peak, info


def compare_logits(label, cls, folder, dump_dir, info):
    """The language-model head: ctxsim's float64 logits at every valid position (model-info
    --dump-heads, logits.npy) against the head class's own, as prune evaluates them."""
    if "logits:      [B, T, V]" not in info:
        fail(f"{label}: ctxsim dumped no logits for a checkpoint with its head: {info.splitlines()[-1]}")
    ids = torch.from_numpy(np.load(os.path.join(dump_dir, "ids.npy")))
    n_valid = torch.from_numpy(np.load(os.path.join(dump_dir, "n_valid.npy")))
    ours = torch.from_numpy(np.load(os.path.join(dump_dir, "logits.npy")))
    model = cls.from_pretrained(folder, attn_implementation="eager", dtype=torch.float64).eval()
    B, T = ids.shape
    mask = (torch.arange(T).view(1, T) < n_valid.view(B, 1)).long()
    with torch.no_grad():
        theirs = model(input_ids=ids, attention_mask=mask).logits
    worst = 0.0
    for b in range(B):
        n = int(n_valid[b])
        worst = max(worst, float((ours[b, :n] - theirs[b, :n]).abs().max() / theirs[b, :n].abs().max()))
    print(f"reference: {label}: logits of the language-model head [{B}, {T}, {theirs.shape[-1]}], float64: max relative deviation "
          f"{worst:.2e} (tolerance 1e-10)")
    if not worst <= 1e-10:
        fail(f"{label}: the head's logits are beyond the tolerance")
    return worst


def cmd_families(ctxsim, tmp):
    float64_throughout()
    worst = 0.0
    for family, (config_cls, keys, base_cls, head_cls, proj) in FAMILIES.items():
        for cls in (base_cls, head_cls):
            label = f"{family} ({cls.__name__})"
            folder = os.path.join(tmp, cls.__name__)
            generator = torch.Generator().manual_seed(20261206)
            torch.manual_seed(20261206)
            model = cls(config_cls(vocab_size=VOCAB, **keys))
            perturb(model, generator)
            model.save_pretrained(folder)  # model.safetensors (float32) + config.json, as users have them
            c, a, pads, peak, info = compare(label, ctxsim, folder, cls, proj, "float64", SAMPLES, tmp, 1e-10)
            if f"family:      {model.config.model_type}" not in info:
                fail(f"{label}: ctxsim read it as another family: {info.splitlines()[1:2]}")
            print(f"reference: {label}: {len(SAMPLES)} samples x {model.config.num_hidden_layers} layers, float64: max relative deviation "
                  f"context {c:.2e}, attention {a:.2e} (tolerance 1e-10); attention on padding {pads:g}; largest weight {peak:.3f}")
            if not (c <= 1e-10 and a <= 1e-10 and pads == 0 and peak > 0.5):
                fail(f"{label}: beyond the tolerance (or attention not peaked, or mass on padding)")
            worst = max(worst, c, a)
            if cls is head_cls:
                worst = max(worst, compare_logits(label, cls, folder, os.path.join(tmp, "dump"), info))
            if cls is head_cls and family == "llama":
                # In float32 nothing is patched: transformers' own float32 RMSNorm, rotary tables
                # and softmax against ctxsim's float32 forward.
                c32, a32, _, _, _ = compare(label, ctxsim, folder, cls, proj, "float32", SAMPLES, tmp, 1e-5)
                print(f"reference: {label}: float32, transformers unpatched: max relative deviation context {c32:.2e}, "
                      f"attention {a32:.2e} (tolerance 1e-5)")
                if not max(c32, a32) <= 1e-5:
                    fail(f"{label}: float32 beyond the tolerance")
            if cls is head_cls and family == "qwen2":
                # As save_pretrained writes a large model: shards and model.safetensors.index.json.
                sharded = folder + "-sharded"
                model.save_pretrained(sharded, max_shard_size="100KB")
                shards = [f for f in os.listdir(sharded) if f.endswith(".safetensors")]
                if "model.safetensors.index.json" not in os.listdir(sharded) or len(shards) < 2:
                    fail(f"{label}: save_pretrained wrote no shards: {sorted(os.listdir(sharded))}")
                cs, as_, _, _, _ = compare(label, ctxsim, sharded, cls, proj, "float64", SAMPLES, tmp, 1e-10)
                print(f"reference: {label} in {len(shards)} shards (model.safetensors.index.json): max relative deviation "
                      f"context {cs:.2e}, attention {as_:.2e} (tolerance 1e-10)")
                if not max(cs, as_) <= 1e-10:
                    fail(f"{label}: the sharded checkpoint is beyond the tolerance")
            if cls is head_cls and family == "mistral":
                # Beyond the sliding window a query no longer sees every earlier key: refused.
                p = subprocess.run([ctxsim, "model-info", folder, "--dump-heads", os.path.join(tmp, "long"), "--ids",
                                    ",".join(["5"] * 33)], capture_output=True, text=True)
                if p.returncode != 1 or "33 tokens per sample exceed the model's sliding window of 32" not in p.stderr:
                    fail(f"{label}: 33 tokens beyond a window of 32 were not refused: {p.stderr.strip()[-300:]}")
            if cls is base_cls and family == "bert":
                # The check can fail: ctxsim's float32 forward is far beyond it.
                c32, a32, _, _, _ = compare(label, ctxsim, folder, cls, proj, "float32", SAMPLES, tmp, 1e-10)
                if max(c32, a32) <= 1e-10:
                    fail(f"{label}: ctxsim's float32 forward passed the float64 check ({c32:.2e}, {a32:.2e})")
    print(f"reference: families: largest deviation {worst:.2e}")


def cmd_folder(ctxsim, folder, tmp):
    """A model folder ctxsim wrote (pretrain's export): transformers loads it as the language-model
    class its config.json names, and its per-head vectors, attention maps and logits are ctxsim's
    in float64."""
    float64_throughout()
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    _, _, _, head_cls, proj = FAMILIES[config["model_type"]]
    if config.get("architectures") != [head_cls.__name__]:
        fail(f"{folder}: config.json names {config.get('architectures')}, not {head_cls.__name__}")
    os.makedirs(tmp, exist_ok=True)
    label = f"{os.path.basename(os.path.dirname(folder))} ({head_cls.__name__})"
    c, a, pads, _, info = compare(label, ctxsim, folder, head_cls, proj, "float64", SAMPLES, tmp, 1e-10)
    print(f"reference: {label}: float64: max relative deviation context {c:.2e}, attention {a:.2e} (tolerance 1e-10); "
          f"attention on padding {pads:g}")
    if not (c <= 1e-10 and a <= 1e-10 and pads == 0):
        fail(f"{label}: beyond the tolerance (or mass on padding)")
    compare_logits(label, head_cls, folder, os.path.join(tmp, "dump"), info)


# -------------------------------------------------------------------------------- GGUF ---------

GGUF_TYPES = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q6_K"]


def gguf_permute(w, n_head, n_head_kv):
    """llama.cpp's convert_hf_to_gguf.py LlamaModel.permute: each head's rotary halves interleaved."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_unpermute(w, n_head):
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_bytes(w, qtype, rng):
    """w (rows x cols float32) in ggml type qtype: quantised by the gguf package where it can;
    for the K-quants (which it only dequantises), random blocks with small finite scales."""
    import gguf
    t = gguf.GGMLQuantizationType[qtype]
    if qtype in ("F32", "F16"):
        return w.astype(np.float32 if qtype == "F32" else np.float16)
    if qtype in ("BF16", "Q8_0", "Q4_0", "Q4_1"):
        return gguf.quants.quantize(w.astype(np.float32), t)
    block, size = gguf.GGML_QUANT_SIZES[t]
    blocks = rng.integers(0, 256, size=(w.shape[0], w.shape[1] // block, size), dtype=np.uint8)
    half = lambda x: np.frombuffer(np.float16(x).tobytes(), dtype=np.uint8)
    if qtype == "Q4_K":
        blocks[..., 0:2], blocks[..., 2:4] = half(1e-3), half(5e-4)
    else:  # Q6_K: d last
        blocks[..., 208:210] = half(2e-4)
    return blocks.reshape(w.shape[0], -1)


def write_gguf(path, model, qtype, rng):
    """A transformers LlamaForCausalLM written as llama.cpp's converter writes it: its metadata,
    Q and K permuted, 2-D weights in qtype, norms F32. Returns the state dict of what the file holds
    (dequantised by the gguf package, Q and K back in transformers' order)."""
    import gguf
    cfg = model.config
    nh, nkv = cfg.num_attention_heads, cfg.num_key_value_heads
    w = gguf.GGUFWriter(path, "llama")
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_rope_freq_base(cfg.rope_parameters["rope_theta"])
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_dimension_count(cfg.head_dim)
    w.add_key_length(cfg.head_dim)
    w.add_value_length(cfg.head_dim)
    w.add_vocab_size(cfg.vocab_size)
    rope = cfg.rope_parameters
    if rope.get("rope_type") == "llama3":  # as the converter's LlamaModel.generate_extra_tensors: a factor per frequency
        d, factor = cfg.head_dim, rope["factor"]
        low, high, old = rope["low_freq_factor"], rope["high_freq_factor"], rope["original_max_position_embeddings"]
        freqs = 1.0 / (rope["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
        factors = []
        for freq in freqs.tolist():
            wavelen = 2 * math.pi / freq
            if wavelen < old / high:
                factors.append(1)
            elif wavelen > old / low:
                factors.append(factor)
            else:
                smooth = (old / wavelen - low) / (high - low)
                factors.append(1 / ((1 - smooth) / factor + smooth))
        w.add_tensor("rope_freqs.weight", np.array(factors, dtype=np.float32))
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight", "lm_head.weight": "output.weight"}
    parts = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate",
             "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    state = {}
    for name, p in model.state_dict().items():
        a = p.detach().float().numpy()
        if name.startswith("model.layers."):
            i, rest = name[len("model.layers."):].split(".", 1)
            part, kind = rest.rsplit(".", 1)
            gname = f"blk.{i}.{parts[part]}.{kind}"
        else:
            gname = names[name]
        q, k = gname.endswith("attn_q.weight"), gname.endswith("attn_k.weight")
        if q or k:
            a = gguf_permute(a, nh, nh if q else nkv)
        if a.ndim == 1:
            data, back = a.astype(np.float32), a.astype(np.float32)
            w.add_tensor(gname, data)
        else:
            data = gguf_bytes(a, qtype, rng)
            t = gguf.GGMLQuantizationType[qtype]
            if qtype in ("F32", "F16"):
                w.add_tensor(gname, data)
                back = data.astype(np.float32)
            else:
                w.add_tensor(gname, data, raw_dtype=t)
                back = gguf.quants.dequantize(data, t).reshape(a.shape).astype(np.float32)
        if q or k:
            back = gguf_unpermute(back, nh if q else nkv)
        state[name] = torch.from_numpy(np.ascontiguousarray(back))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return state


def cmd_gguf(ctxsim, smollm, tmp):
    """GGUF files, against the gguf package and transformers:
    (a, b) a random LlamaForCausalLM (GQA, head_dim 64) written to GGUF as llama.cpp's converter does
    (Q and K permuted), in each type ctxsim dequantises; transformers with the weights the gguf
    package's dequantize gives (Q and K put back) and ctxsim on the file give the same float64 heads
    and maps (<= 1e-10): the dequantisation is the package's bit for bit (one ulp of float32 would
    show as ~1e-7), the permutation undone;
    (c) the real SmolLM2-135M-Instruct Q4_1 against transformers' own GGUF loading, float32 <= 1e-4."""
    float64_throughout()
    os.makedirs(tmp, exist_ok=True)
    cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                   head_dim=64, intermediate_size=512, max_position_embeddings=64, rope_theta=500.0,
                                   tie_word_embeddings=False)
    proj = FAMILIES["llama"][4]
    rng = np.random.default_rng(20261206)
    for qtype in GGUF_TYPES:
        torch.manual_seed(7)
        model = transformers.LlamaForCausalLM(cfg)
        perturb(model, torch.Generator().manual_seed(7))
        path = os.path.join(tmp, f"llama-{qtype}.gguf")
        state = write_gguf(path, model, qtype, rng)
        model.load_state_dict(state)
        model = model.to(torch.float64).eval()
        model.config._attn_implementation = "eager"
        *_, c, a = heads_against(f"GGUF {qtype}", ctxsim, path, model, proj, "float64", SAMPLES, os.path.join(tmp, "dump"))
        print(f"reference: GGUF {qtype}: ctxsim on the file vs transformers on the gguf package's dequantised weights, float64: "
              f"max relative deviation context {c:.2e}, attention {a:.2e} (tolerance 1e-10)")
        if not (c <= 1e-10 and a <= 1e-10):
            fail(f"GGUF {qtype}: beyond the tolerance")
    # Llama 3.1+'s rope scaling, which a GGUF holds as rope_freqs.weight (float32 factors): ctxsim on
    # the file against transformers computing rope_type llama3 from the parameters in float64
    # (float32's rounding of the factors, about 1e-7 of each frequency, is the difference); and the
    # parameters init-model --like finds in the factors.
    scaling = dict(rope_type="llama3", rope_theta=500.0, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                   original_max_position_embeddings=32)
    cfg3 = transformers.LlamaConfig(**{**cfg.to_dict(), "rope_parameters": scaling})
    torch.manual_seed(7)
    model = transformers.LlamaForCausalLM(cfg3)
    perturb(model, torch.Generator().manual_seed(7))
    path = os.path.join(tmp, "llama3-rope.gguf")
    model.load_state_dict(write_gguf(path, model, "F32", rng))
    model = model.to(torch.float64).eval()
    model.config._attn_implementation = "eager"
    *_, c, a = heads_against("GGUF rope_freqs", ctxsim, path, model, proj, "float64", SAMPLES, os.path.join(tmp, "dump"))
    print(f"reference: GGUF with rope_freqs.weight (Llama 3.1+ rope scaling): ctxsim on the file vs transformers' rope_type llama3, "
          f"float64: max relative deviation context {c:.2e}, attention {a:.2e} (tolerance 1e-5)")
    if not (c <= 1e-5 and a <= 1e-5):
        fail("GGUF rope_freqs: beyond the tolerance")
    like = os.path.join(tmp, "llama3-like")
    run(ctxsim, "init-model", "--like", path, "--vocab", "data/tokenizers/llama3/tokenizer.json", "--out", like)
    with open(os.path.join(like, "config.json")) as f:
        got = json.load(f).get("rope_scaling")
    want = {k: v for k, v in scaling.items() if k != "rope_theta"}
    if got != want:
        fail(f"init-model --like {path}: rope_scaling {got}, the file's factors are those of {want}")
    print(f"reference: init-model --like the GGUF found rope_scaling {got} in its factors")
    if not os.path.exists(smollm):
        fail(f"{smollm} is missing: scripts/setup.sh fetches it")
    model = transformers.AutoModelForCausalLM.from_pretrained(os.path.dirname(smollm), gguf_file=os.path.basename(smollm),
                                                              attn_implementation="eager", dtype=torch.float32).eval()
    ids = [[1, 504, 2365, 3443, 335, 260, 3549, 30, 1838, 4429, 988, 28, 2], [1, 1069, 7059, 30, 2]]
    info, ids, n_valid, _, _, c, a = heads_against("SmolLM2", ctxsim, smollm, model, proj, "float32", ids, os.path.join(tmp, "smollm"))
    print(f"reference: SmolLM2-135M-Instruct Q4_1 (GGUF): ctxsim vs transformers' GGUF loading, float32: max relative deviation "
          f"context {c:.2e}, attention {a:.2e} (tolerance 1e-4)")
    if not (c <= 1e-4 and a <= 1e-4):
        fail("SmolLM2: beyond the tolerance")
    # Its language-model head (the decoder tied to the embeddings): ctxsim's float64 logits
    # (model-info --dump-heads, what prune's losses are made of) against transformers' float32.
    if "logits:      [B, T, V]" not in info:
        fail(f"SmolLM2: ctxsim dumped no logits: {info.splitlines()[-1]}")
    ours = torch.from_numpy(np.load(os.path.join(tmp, "smollm", "logits.npy")))
    B, T = ids.shape
    mask = (torch.arange(T).view(1, T) < n_valid.view(B, 1)).long()
    with torch.no_grad():
        theirs = model(input_ids=ids, attention_mask=mask).logits.double()
    worst = max(float((ours[b, :n] - theirs[b, :n]).abs().max() / theirs[b, :n].abs().max()) for b, n in enumerate(n_valid.tolist()))
    print(f"reference: SmolLM2-135M-Instruct Q4_1 (GGUF): logits [{B}, {T}, {theirs.shape[-1]}], ctxsim float64 vs transformers float32: "
          f"max relative deviation {worst:.2e} (tolerance 1e-4)")
    if not worst <= 1e-4:
        fail("SmolLM2: the logits are beyond the tolerance")


# -------------------------------------------------------------------------------- MiniLM -------

def brown_sentences(brown):
    docs = []
    for name in sorted(os.listdir(brown)):
        if len(name) != 4 or not name.startswith("c"):
            continue
        with open(os.path.join(brown, name), encoding="utf-8") as f:
            sentences = [" ".join(t.rsplit("/", 1)[0] for t in line.split()) for line in f]
        docs.append([s for s in sentences if s])
    return docs


HOSTILE = [
    "naïve café résumé, São Paulo and Ångström in Zürich", "ÉCOLE façade jalapeño coöperate", "東京は日本の首都です。",
    "中文字符测试 and 漢字 mixed with English", "한국어 문장 ひらがなとカタカナ", "Привет, мир! Съешь же ещё этих мягких французских булок",
    "مرحبا بالعالم שלום עולם", "नमस्ते दुनिया สวัสดีครับ Γειά σου Κόσμε", "👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷🇩🇪 ❤️ 🧑🏾‍💻",
    "I can't believe it's 😀😃😄 already", "supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis",
    "x" * 150, "a" + "é" * 120 + "z", "word     with      runs       of        spaces", "\ttabs\t\tand  \t mixed   whitespace\t",
    "   leading and trailing   ", "!!!???... -- — «quoted» “curly” (parens) [brackets] {braces}", "http://example.com/path?q=1&r=2 user@example.org",
    "$100 €50 £3 ¥1000 100% ~tilde~ _under_ 4½ ٣٤٥ १२३", "ΣΊΣΥΦΟΣ ΟΔΥΣΣΕΥΣ final sigma Σ", "[SEP] literal [CLS] specials [MASK] inside",
    "ﬁne ligatures and ＦＵＬＬＷＩＤＴＨ letters", "\u200bzero\u200dwidth\ufeffmarks", "combining e\u0301 and n\u0303 accents",
]


SPECIALS = [
    "a [SEP] b [CLS][MASK] c [PAD] [UNK] d", "[SEP]", "x[MASK]y", "[sep] [Sep] lower-case ones are words",
    "x <|endoftext|> y", "<|endoftext|>", "a<|endoftext|><|endoftext|>b", "<|endoftext",
    "<s> hi </s> <pad> <unk> <mask> there", "a  <mask>  b", "<s></s><mask>", "<S> </S> <Mask> not specials",
    "<|begin_of_text|>Hi<|eot_id|> there<|start_header_id|>user<|end_header_id|>", "<|reserved_special_token_7|>x",
    "<|im_start|>user hi<|im_end|> <think>hmm</think>", "I'M DON'T we'LL They'RE", "digits 1234567 and 12 345 6789",
    "tabs\tand\u000b\u000cfeeds", "\u00a0non\u2003breaking\u3000spaces", "ａｂｃ composed é vs e\u0301 decomposed, Å vs A\u030a",
]


def cmd_minilm(ctxsim, model_dir, brown, tmp):
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    if not tokenizer.is_fast:
        fail("AutoTokenizer gave a slow tokenizer; the reference is the tokenizers library's")
    docs = brown_sentences(brown)
    windows = []
    for doc in docs[::len(docs) // 50][:50]:  # 50 documents across the corpus' genres, each its first 128 tokens
        windows.append(tokenizer(" ".join(doc), truncation=True, max_length=128)["input_ids"])
    hostile = [tokenizer(s)["input_ids"] for s in HOSTILE]
    if len(windows) < 50 or any(len(w) != 128 for w in windows) or len(hostile) < 20:
        fail(f"expected 50 windows of 128 tokens and 20 hostile strings, got {len(windows)} and {len(hostile)}")
    cls, proj = transformers.BertModel, FAMILIES["bert"][4]
    for dtype, tolerance in (("float32", 1e-4), ("float64", 1e-10)):
        worst_c = worst_a = 0.0
        samples = windows + hostile
        for at in range(0, len(samples), 25):
            c, a, pads, peak, info = compare("MiniLM", ctxsim, model_dir, cls, proj, dtype, samples[at:at + 25], tmp, tolerance)
            if "family:      bert" not in info or "6 layers, hidden 384, 12 heads" not in info:
                fail(f"MiniLM: ctxsim read another shape: {info}")
            if pads != 0:
                fail(f"MiniLM {dtype}: attention on padding keys {pads:g}")
            worst_c, worst_a = max(worst_c, c), max(worst_a, a)
        print(f"reference: all-MiniLM-L6-v2 (BertModel): {len(windows)} Brown windows of 128 tokens + {len(hostile)} hostile strings x 6 "
              f"layers x 12 heads, {dtype}: max relative deviation context {worst_c:.2e}, attention {worst_a:.2e} (tolerance {tolerance:g})")
        if worst_c > tolerance or worst_a > tolerance:
            fail(f"MiniLM {dtype}: beyond the tolerance {tolerance:g}")


# ---------------------------------------------------------------------------- tokenizers -------

def compare_ids(label, ours, theirs, lines, reference="tokenizers"):
    if len(ours) != len(lines):
        fail(f"{label}: ctxsim wrote {len(ours)} lines for {len(lines)}")
    for n, (a, b, text) in enumerate(zip(ours, theirs, lines), 1):
        if a != b:
            fail(f"{label}: line {n} differs: text {text!r}; ctxsim {a[:40]}; {reference} {b[:40]}")
    print(f"reference: tokenizer {label}: {len(lines)} lines, {sum(len(i) for i in theirs)} ids, identical to {reference}'s")


def ctxsim_ids(ctxsim, args, text):
    return [[int(t) for t in line.split()] for line in run(ctxsim, "tokenize", *args, stdin=text).split("\n")[:-1]]


def cmd_tokenizers(ctxsim, lines_path, tmp):
    with open(lines_path, encoding="utf-8") as f:
        lines = f.read().split("\n")[:-1]
    # Then the strings of the MiniLM check, and every family's special tokens written in the text:
    # the library matches them before the model (an added token), with its flags.
    lines += HOSTILE + SPECIALS
    text = "\n".join(lines) + "\n"
    if len(lines) < 10000:
        fail(f"{lines_path}: {len(lines)} lines, expected at least 10,000")

    def ids(tok):  # a tokenizers.Tokenizer, or what transformers' AutoTokenizer wraps around one
        backend = getattr(tok, "backend_tokenizer", tok)
        # A file's batch settings (MiniLM's pads and truncates to 128) are not its tokenization:
        # ctxsim frames and cuts samples itself (SPEC §1).
        backend.no_padding()
        backend.no_truncation()
        return [e.ids for e in backend.encode_batch(lines, add_special_tokens=False)]

    def auto(folder):  # what a Hugging Face user gets for the folder: the tokenizers library underneath
        tok = transformers.AutoTokenizer.from_pretrained(folder)
        if not tok.is_fast:
            fail(f"{folder}: AutoTokenizer gave a tokenizer without the tokenizers library underneath")
        return ids(tok)

    def agree(label, a, b):
        if a != b:
            fail(f"{label}: the two references disagree, so neither decides")
        return a

    # bert-base-uncased's vocab.txt: a BERT folder around it (init-model's) read by AutoTokenizer,
    # and the tokenizers library's own BertWordPieceTokenizer over the file.
    bert = os.path.join(tmp, "bert")
    run(ctxsim, "init-model", "--preset", "bert-tiny", "--layers", "1", "--vocab", "data/vocab/bert-base-uncased.txt", "--out", bert)
    theirs = agree("bert-base-uncased", auto(bert), ids(tokenizers.BertWordPieceTokenizer("data/vocab/bert-base-uncased.txt", lowercase=True)))
    compare_ids("bert-base-uncased (vocab.txt)", ctxsim_ids(ctxsim, ["--vocab", "data/vocab/bert-base-uncased.txt"], text), theirs, lines)
    # all-MiniLM-L6-v2's own files: its tokenizer.json, and AutoTokenizer on its folder.
    minilm = "data/models/all-MiniLM-L6-v2"
    theirs = agree("all-MiniLM-L6-v2", auto(minilm), ids(Tokenizer.from_file(f"{minilm}/tokenizer.json")))
    compare_ids("all-MiniLM-L6-v2 (its folder: vocab.txt, tokenizer_config.json)", ctxsim_ids(ctxsim, ["--model", minilm], text), theirs, lines)
    compare_ids("all-MiniLM-L6-v2 (its tokenizer.json)", ctxsim_ids(ctxsim, ["--vocab", f"{minilm}/tokenizer.json"], text), theirs, lines)
    # GPT-2 and RoBERTa: init-model's folder from GPT-2's vocab.json + merges.txt (RoBERTa's puts
    # <s> <pad> </s> <unk> first), read by AutoTokenizer (GPT2Tokenizer, RobertaTokenizer), which
    # saves the tokenizer.json users have; ctxsim reads both the files and that tokenizer.json.
    for family, preset, label in (("gpt2", "gpt2-tiny", "GPT-2"), ("roberta", "roberta-tiny", "RoBERTa")):
        folder = os.path.join(tmp, family)
        run(ctxsim, "init-model", "--family", family, "--preset", preset, "--layers", "1", "--vocab", "data/vocab/gpt2", "--out", folder)
        tok = transformers.AutoTokenizer.from_pretrained(folder)
        tok.save_pretrained(os.path.join(tmp, family + "-tok"))
        saved = os.path.join(tmp, family + "-tok", "tokenizer.json")
        theirs = agree(label, ids(tok), ids(Tokenizer.from_file(saved)))
        compare_ids(f"{label} (vocab.json, merges.txt)", ctxsim_ids(ctxsim, ["--model", folder], text), theirs, lines)
        compare_ids(f"{label} (tokenizer.json)", ctxsim_ids(ctxsim, ["--vocab", saved], text), theirs, lines)
    # roberta-base's own tokenizer.json gives <mask> lstrip (it takes the whitespace before it);
    # rstrip on </s> besides: the flags as the library applies them.
    with open(saved, encoding="utf-8") as f:
        j = json.load(f)
    for t in j["added_tokens"]:
        t["lstrip"], t["rstrip"] = t["content"] == "<mask>", t["content"] == "</s>"
    stripped = os.path.join(tmp, "roberta-strip.json")
    with open(stripped, "w", encoding="utf-8") as f:
        json.dump(j, f)
    compare_ids("RoBERTa (tokenizer.json, <mask> lstrip, </s> rstrip)", ctxsim_ids(ctxsim, ["--vocab", stripped], text),
                ids(Tokenizer.from_file(stripped)), lines)
    # The Llama lineage's tokenizer.json (scripts/fetch_data.sh): a Split regex of the file's own
    # (PCRE2 for the library's Oniguruma), ignore_merges, added tokens past model.vocab; Qwen3's NFC.
    for name, label in (("llama3", "Llama 3"), ("qwen3", "Qwen3"), ("llama2", "Llama 2 (sentencepiece-style, byte_fallback)"),
                        ("mistral", "Mistral v0.3 (Metaspace pre-tokenizer, prepend_scheme first)")):
        path = f"data/tokenizers/{name}/tokenizer.json"
        compare_ids(f"{label} (tokenizer.json)", ctxsim_ids(ctxsim, ["--vocab", path], text), ids(Tokenizer.from_file(path)), lines)
    # The Metaspace pre-tokenizer's other settings, on Mistral's vocabulary: split at every ▁,
    # prepend never or always (also as the older add_prefix_space spells it).
    path = "data/tokenizers/mistral/tokenizer.json"
    with open(path, encoding="utf-8") as f:
        mj = json.load(f)
    for label, pre in (("split, always", {"prepend_scheme": "always", "split": True}), ("never", {"prepend_scheme": "never", "split": False}),
                       ("add_prefix_space", {"add_prefix_space": True})):
        mj["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", **pre}
        variant = os.path.join(tmp, "mistral-variant.json")
        with open(variant, "w", encoding="utf-8") as f:
            json.dump(mj, f, ensure_ascii=False)
        compare_ids(f"Mistral's vocabulary, Metaspace {label}", ctxsim_ids(ctxsim, ["--vocab", variant], text), ids(Tokenizer.from_file(variant)),
                    lines)
    # And sentencepiece itself, Mistral's own implementation, on its model file (the Brown lines: on
    # runs of whitespace its piece scores and the converted merges part, as transformers' fast
    # tokenizer does from it).
    import sentencepiece
    sp = sentencepiece.SentencePieceProcessor(model_file="data/tokenizers/mistral/tokenizer.model")
    brown = int(12000 * 0.8)  # tests/bpe/lines.py: Brown sentences first, 80% of the lines
    ours = ctxsim_ids(ctxsim, ["--vocab", path], "\n".join(lines[:brown]) + "\n")
    compare_ids("Mistral v0.3 against sentencepiece (its tokenizer.model), Brown lines", ours, [sp.encode(l) for l in lines[:brown]],
                lines[:brown], reference="sentencepiece")
    # SmolLM2's GGUF: its own vocabulary (tokens, merges, control tokens) and pre-tokenizer
    # "smollm", which llama.cpp applies as SmolLM2's tokenizer.json does: Digits (one piece per
    # digit), then ByteLevel with GPT-2's regex. transformers' GGUF loading keeps the vocabulary
    # but drops the Digits step (its converter knows no "smollm"), which changes the pieces where
    # whitespace meets a digit ("x  1": "  " + "1" with it, " " + " 1" without). The reference is
    # the library with the file's vocabulary and SmolLM2's own pre-tokenizer; ctxsim reads the GGUF
    # and that tokenizer.json (the Digits step) alike.
    smollm = "data/models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf"
    tok = transformers.AutoTokenizer.from_pretrained(os.path.dirname(smollm), gguf_file=os.path.basename(smollm))
    j = json.loads(tok.backend_tokenizer.to_str())
    j["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
    saved = os.path.join(tmp, "smollm2-tokenizer.json")
    with open(saved, "w", encoding="utf-8") as f:
        json.dump(j, f, ensure_ascii=False)
    theirs = ids(Tokenizer.from_file(saved))
    compare_ids("SmolLM2-135M-Instruct (GGUF)", ctxsim_ids(ctxsim, ["--model", smollm], text), theirs, lines)
    compare_ids("SmolLM2-135M-Instruct (tokenizer.json: Digits, ByteLevel)", ctxsim_ids(ctxsim, ["--vocab", saved], text), theirs, lines)
    dropped = ids(tok)
    print(f"reference: transformers' GGUF tokenizer of SmolLM2 (without the Digits step) differs on "
          f"{sum(a != b for a, b in zip(dropped, theirs))} of {len(lines)} lines")
    # Llama 3's vocabulary as a GGUF holds it (llama.cpp's converter: tokens in id order, "a b"
    # merges, added tokens as control tokens, pre-tokenizer llama-bpe): the same ids as its
    # tokenizer.json, whose ignore_merges a GGUF does not spell (588 of its tokens no merge reaches).
    import gguf
    path = "data/tokenizers/llama3/tokenizer.json"
    with open(path, encoding="utf-8") as f:
        tj = json.load(f)
    vocab = dict(tj["model"]["vocab"])
    for a in tj["added_tokens"]:
        vocab[a["content"]] = a["id"]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    special = {a["id"] for a in tj["added_tokens"]}
    g = os.path.join(tmp, "llama3-vocab.gguf")
    w = gguf.GGUFWriter(g, "llama")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_types([3 if i in special else 1 for i in range(len(tokens))])
    w.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    compare_ids("Llama 3 (its vocabulary in a GGUF, pre llama-bpe)", ctxsim_ids(ctxsim, ["--vocab", g], text), ids(Tokenizer.from_file(path)), lines)

def main():
    case, ctxsim = sys.argv[1], sys.argv[2]
    print(f"reference: transformers {transformers.__version__}, tokenizers {tokenizers.__version__}, torch {torch.__version__}")
    if case == "families":
        cmd_families(ctxsim, sys.argv[3])
    elif case == "minilm":
        cmd_minilm(ctxsim, sys.argv[3], sys.argv[4], sys.argv[5])
    elif case == "tokenizers":
        cmd_tokenizers(ctxsim, sys.argv[3], sys.argv[4])
    elif case == "folder":
        cmd_folder(ctxsim, sys.argv[3], sys.argv[4])
    elif case == "gguf":
        cmd_gguf(ctxsim, sys.argv[3], sys.argv[4])
    else:
        sys.exit(f"hf_reference.py: unknown case {case!r} (families, minilm, tokenizers, folder, gguf)")


if __name__ == "__main__":
    main()
