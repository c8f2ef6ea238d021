#!/usr/bin/python3
# An independent float64 reference for the per-head quantities of SPEC §2 (the context vectors
# o_i = sum_j A_ij v_j before the output projection, and the attention maps A) of BERT, DistilBERT
# and RoBERTa checkpoints in Hugging Face's layout. Written from the semantics of transformers'
# modeling_bert.py (BertModel, eager attention), modeling_distilbert.py (DistilBertModel) and
# modeling_roberta.py (RobertaModel: BERT's layers; positions from create_position_ids_from_input_ids)
# and modeling_gpt2.py (GPT2Model, eager attention: Conv1D x @ W + b, pre-LN blocks, the causal
# mask by torch.where(causal, w, finfo.min) then the padding mask added), not
# from ctxsim's C++: its own safetensors parser, its own key names, HF's order of operations
# (BERT: scores / sqrt(d) + (1 - mask) * finfo.min; DistilBERT: q / sqrt(d) before q k^T and
# masked_fill(finfo.min)). Needs only Debian's python3-torch and numpy.
#
#   model_reference.py layout MODEL_DIR             the checkpoint holds exactly the tensors of
#                                                    HF's BertModel / DistilBertForMaskedLM
#   model_reference.py perturb MODEL_DIR OUT_DIR     a copy whose biases and LayerNorms are
#                                                    non-trivial and whose attention is peaked, so
#                                                    that the check exercises every parameter
#   model_reference.py check MODEL_DIR DUMP_DIR [--tolerance 1e-10]
#       compares `ctxsim model-info MODEL_DIR --dtype float64 --dump-heads DUMP_DIR --ids …` with
#       this reference: per sample and layer, max |ctxsim - reference| / max |reference| of the
#       context vectors and of the attention maps; exit 1 above the tolerance.
import argparse
import json
import math
import os
import shutil
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

KINDS = {"F32": (torch.float32, 4), "F16": (torch.float16, 2), "BF16": (torch.bfloat16, 2), "F64": (torch.float64, 8)}


def read_safetensors(path):
    """{name: tensor} in the file's own dtypes, and its metadata."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        kind, size = KINDS[info["dtype"]]
        begin, end = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=kind) if end > begin else torch.empty(0, dtype=kind)
        tensors[name] = t.reshape(info["shape"])
    return tensors, header.get("__metadata__", {})


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        b = tensors[name].to(torch.float32).contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_model(folder):
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    tensors, _ = read_safetensors(os.path.join(folder, "model.safetensors"))
    return cfg, tensors


# ---------------------------------------------------------------- the families, as HF names them

def shape_of(cfg):
    """(family, layers, hidden, heads, ffn, activation, eps) from config.json's own keys."""
    family = cfg.get("model_type", "bert")
    if family in ("bert", "roberta"):
        return family, cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"], cfg["intermediate_size"], \
            cfg.get("hidden_act", "gelu"), cfg.get("layer_norm_eps", 1e-12)
    if family == "gpt2":  # GPT2Config: n_inner None means 4 * n_embd
        return family, cfg["n_layer"], cfg["n_embd"], cfg["n_head"], cfg.get("n_inner") or 4 * cfg["n_embd"], \
            cfg.get("activation_function", "gelu_new"), cfg.get("layer_norm_epsilon", 1e-5)
    if family == "distilbert":  # DistilBERT's LayerNorms are nn.LayerNorm(dim, eps=1e-12)
        return family, cfg["n_layers"], cfg["dim"], cfg["n_heads"], cfg["hidden_dim"], cfg.get("activation", "gelu"), 1e-12
    raise SystemExit(f"unsupported model_type {family}")


def expected_layout(cfg):
    """{name: shape} of HF's BertModel state dict, or DistilBertForMaskedLM's without the tied
    vocab_projector.weight (save_pretrained drops a tied copy)."""
    family, L, D, _, Fd, _, _ = shape_of(cfg)
    V, P = cfg["vocab_size"], cfg.get("max_position_embeddings", 512)
    out = {}
    if family in ("bert", "roberta"):  # RobertaModel's state dict has BertModel's names
        out.update({"embeddings.word_embeddings.weight": [V, D], "embeddings.position_embeddings.weight": [P, D],
                    "embeddings.token_type_embeddings.weight": [cfg.get("type_vocab_size", 2), D],
                    "embeddings.LayerNorm.weight": [D], "embeddings.LayerNorm.bias": [D],
                    "pooler.dense.weight": [D, D], "pooler.dense.bias": [D]})
        for i in range(L):
            p = f"encoder.layer.{i}."
            for m in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
                out[p + m + ".weight"], out[p + m + ".bias"] = [D, D], [D]
            for m in ("attention.output.LayerNorm", "output.LayerNorm"):
                out[p + m + ".weight"], out[p + m + ".bias"] = [D], [D]
            out[p + "intermediate.dense.weight"], out[p + "intermediate.dense.bias"] = [Fd, D], [Fd]
            out[p + "output.dense.weight"], out[p + "output.dense.bias"] = [D, Fd], [D]
        return out
    if family == "gpt2":  # GPT2Model: Conv1D weights are [in, out]
        P = cfg.get("n_positions", 1024)
        out.update({"wte.weight": [V, D], "wpe.weight": [P, D], "ln_f.weight": [D], "ln_f.bias": [D]})
        for i in range(L):
            p = f"h.{i}."
            for m in ("ln_1", "ln_2"):
                out[p + m + ".weight"], out[p + m + ".bias"] = [D], [D]
            out[p + "attn.c_attn.weight"], out[p + "attn.c_attn.bias"] = [D, 3 * D], [3 * D]
            out[p + "attn.c_proj.weight"], out[p + "attn.c_proj.bias"] = [D, D], [D]
            out[p + "mlp.c_fc.weight"], out[p + "mlp.c_fc.bias"] = [D, Fd], [Fd]
            out[p + "mlp.c_proj.weight"], out[p + "mlp.c_proj.bias"] = [Fd, D], [D]
        return out
    e = "distilbert.embeddings."
    out.update({e + "word_embeddings.weight": [V, D], e + "position_embeddings.weight": [P, D], e + "LayerNorm.weight": [D],
                e + "LayerNorm.bias": [D], "vocab_transform.weight": [D, D], "vocab_transform.bias": [D],
                "vocab_layer_norm.weight": [D], "vocab_layer_norm.bias": [D], "vocab_projector.bias": [V]})
    for i in range(L):
        p = f"distilbert.transformer.layer.{i}."
        for m in ("attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin"):
            out[p + m + ".weight"], out[p + m + ".bias"] = [D, D], [D]
        for m in ("sa_layer_norm", "output_layer_norm"):
            out[p + m + ".weight"], out[p + m + ".bias"] = [D], [D]
        out[p + "ffn.lin1.weight"], out[p + "ffn.lin1.bias"] = [Fd, D], [Fd]
        out[p + "ffn.lin2.weight"], out[p + "ffn.lin2.bias"] = [D, Fd], [D]
    return out


def activation(name):
    return {"gelu": F.gelu, "relu": F.relu, "gelu_new": lambda x: F.gelu(x, approximate="tanh")}[name]


def create_position_ids_from_input_ids(input_ids, padding_idx):
    """modeling_roberta.py's: non-padding tokens numbered from padding_idx + 1, padding at padding_idx."""
    mask = input_ids.ne(padding_idx).int()
    incremental_indices = torch.cumsum(mask, dim=1).type_as(mask) * mask
    return incremental_indices.long() + padding_idx


def bert_heads(cfg, w, ids, valid):
    """HF BertModel (or RobertaModel) in float64: per layer (context [B,H,T,d], attention [B,H,T,T])."""
    family = shape_of(cfg)[0]
    prefix = family + "."
    w = {k[len(prefix):] if k.startswith(prefix) else k: v.to(torch.float64) for k, v in w.items()}
    _, L, D, H, _, act, eps = shape_of(cfg)
    B, T = ids.shape
    d = D // H
    e = "embeddings."
    x = w[e + "word_embeddings.weight"][ids] + w[e + "token_type_embeddings.weight"][torch.zeros_like(ids)]
    if family == "roberta":
        positions = create_position_ids_from_input_ids(ids, cfg.get("pad_token_id", 1))
    else:
        positions = torch.arange(T).unsqueeze(0).expand(B, T)
    x = x + w[e + "position_embeddings.weight"][positions]
    x = F.layer_norm(x, (D,), w[e + "LayerNorm.weight"], w[e + "LayerNorm.bias"], eps)
    extended = (1.0 - valid[:, None, None, :].to(torch.float64)) * torch.finfo(torch.float64).min
    split = lambda t: t.view(B, T, H, d).permute(0, 2, 1, 3)
    layers = []
    for i in range(L):
        p = f"encoder.layer.{i}."
        lin = lambda x, m: F.linear(x, w[p + m + ".weight"], w[p + m + ".bias"])
        q, k, v = (split(lin(x, "attention.self." + m)) for m in ("query", "key", "value"))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d) + extended
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v)
        layers.append((ctx, probs))
        merged = ctx.permute(0, 2, 1, 3).reshape(B, T, D)
        a = F.layer_norm(lin(merged, "attention.output.dense") + x, (D,), w[p + "attention.output.LayerNorm.weight"],
                         w[p + "attention.output.LayerNorm.bias"], eps)
        h = lin(activation(act)(lin(a, "intermediate.dense")), "output.dense")
        x = F.layer_norm(h + a, (D,), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    return layers


def distilbert_heads(cfg, w, ids, valid):
    """HF DistilBertModel in float64: per layer (context [B,H,T,d], attention [B,H,T,T])."""
    w = {k[len("distilbert."):] if k.startswith("distilbert.") else k: v.to(torch.float64) for k, v in w.items()}
    _, L, D, H, _, act, eps = shape_of(cfg)
    B, T = ids.shape
    d = D // H
    e = "embeddings."
    x = w[e + "word_embeddings.weight"][ids] + w[e + "position_embeddings.weight"][torch.arange(T)].unsqueeze(0)
    x = F.layer_norm(x, (D,), w[e + "LayerNorm.weight"], w[e + "LayerNorm.bias"], eps)
    masked = (valid == 0).view(B, 1, 1, T)
    shape = lambda t: t.view(B, -1, H, d).transpose(1, 2)
    layers = []
    for i in range(L):
        p = f"transformer.layer.{i}."
        lin = lambda x, m: F.linear(x, w[p + m + ".weight"], w[p + m + ".bias"])
        q, k, v = (shape(lin(x, "attention." + m)) for m in ("q_lin", "k_lin", "v_lin"))
        q = q / math.sqrt(d)
        scores = torch.matmul(q, k.transpose(2, 3))
        scores = scores.masked_fill(masked.expand_as(scores), torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(weights, v)
        layers.append((ctx, weights))
        sa = lin(ctx.transpose(1, 2).contiguous().view(B, -1, H * d), "attention.out_lin")
        sa = F.layer_norm(sa + x, (D,), w[p + "sa_layer_norm.weight"], w[p + "sa_layer_norm.bias"], eps)
        ffn = lin(activation(act)(lin(sa, "ffn.lin1")), "ffn.lin2")
        x = F.layer_norm(ffn + sa, (D,), w[p + "output_layer_norm.weight"], w[p + "output_layer_norm.bias"], eps)
    return layers


def gpt2_heads(cfg, w, ids, valid):
    """HF GPT2Model in float64: per layer (context [B,H,T,d], attention [B,H,T,T])."""
    w = {k[len("transformer."):] if k.startswith("transformer.") else k: v.to(torch.float64) for k, v in w.items()}
    _, L, D, H, _, act, eps = shape_of(cfg)
    B, T = ids.shape
    d = D // H
    conv1d = lambda x, m: torch.addmm(w[m + ".bias"], x.reshape(-1, x.shape[-1]), w[m + ".weight"]).view(*x.shape[:-1], -1)
    x = w["wte.weight"][ids] + w["wpe.weight"][torch.arange(T)].unsqueeze(0)
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool)).view(1, 1, T, T)
    attention_mask = (1.0 - valid[:, None, None, :].to(torch.float64)) * torch.finfo(torch.float64).min
    split = lambda t: t.view(B, T, H, d).permute(0, 2, 1, 3)
    layers = []
    for i in range(L):
        p = f"h.{i}."
        h = F.layer_norm(x, (D,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        q, k, v = conv1d(h, p + "attn.c_attn").split(D, dim=2)
        q, k, v = split(q), split(k), split(v)
        weights = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)  # scale_attn_weights
        weights = torch.where(causal, weights, torch.tensor(torch.finfo(weights.dtype).min, dtype=weights.dtype))
        weights = torch.softmax(weights + attention_mask, dim=-1)
        ctx = torch.matmul(weights, v)
        layers.append((ctx, weights))
        x = x + conv1d(ctx.permute(0, 2, 1, 3).reshape(B, T, D), p + "attn.c_proj")
        h = F.layer_norm(x, (D,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        x = x + conv1d(activation(act)(conv1d(h, p + "mlp.c_fc")), p + "mlp.c_proj")
    return layers


# ---------------------------------------------------------------- commands

def cmd_layout(args):
    cfg, tensors = read_model(args.model)
    want = expected_layout(cfg)
    got = {k: list(v.shape) for k, v in tensors.items()}
    missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    wrong = sorted(k for k in set(want) & set(got) if want[k] != got[k])
    if missing or extra or wrong:
        print(f"layout: missing {missing[:5]}, unexpected {extra[:5]}, misshapen {wrong[:5]}")
        return 1
    print(f"layout: {shape_of(cfg)[0]}: the {len(want)} tensors of Hugging Face's layout, shapes as config.json implies")
    return 0


def cmd_perturb(args):
    """Biases 0.1 sin(k), LayerNorm weights 1 + 0.1 sin(k), query and key weights x8 (peaked attention)."""
    cfg, tensors = read_model(args.model)
    os.makedirs(args.out, exist_ok=True)
    out, k = {}, 0
    for name in sorted(tensors):
        t = tensors[name].to(torch.float64).clone().reshape(-1)
        if name.endswith(".bias") or "LayerNorm" in name or "layer_norm" in name or name.split(".")[-2].startswith("ln_"):
            t += 0.1 * torch.sin(torch.arange(k, k + t.numel(), dtype=torch.float64))
            k += t.numel()
        elif any(m + ".weight" in name for m in ("self.query", "self.key", "q_lin", "k_lin")):
            t *= 8
        elif name.endswith("attn.c_attn.weight"):  # GPT-2's [in, 3 out]: the query and key columns
            t = t.reshape(tensors[name].shape)
            t[:, : 2 * (t.shape[1] // 3)] *= 8
            t = t.reshape(-1)
        out[name] = t.reshape(tensors[name].shape)
    write_safetensors(os.path.join(args.out, "model.safetensors"), out)
    for f in ("config.json", "vocab.txt", "vocab.json", "merges.txt"):  # the tokenizer files the family has
        if os.path.exists(os.path.join(args.model, f)):
            shutil.copy(os.path.join(args.model, f), os.path.join(args.out, f))
    return 0


def relative(a, r):
    return float((a - r).abs().max() / r.abs().max())


def cmd_check(args):
    cfg, tensors = read_model(args.model)
    family, L, D, H, _, _, _ = shape_of(cfg)
    ids = torch.from_numpy(np.load(os.path.join(args.dump, "ids.npy")))
    n_valid = torch.from_numpy(np.load(os.path.join(args.dump, "n_valid.npy")))
    context = torch.from_numpy(np.load(os.path.join(args.dump, "context.npy")))      # [B, L, H, T, d]
    attention = torch.from_numpy(np.load(os.path.join(args.dump, "attention.npy")))  # [B, L, H, T, T]
    B, T = ids.shape
    if context.dtype != torch.float64 or tuple(context.shape) != (B, L, H, T, D // H) or tuple(attention.shape) != (B, L, H, T, T):
        print(f"check: dump shapes {tuple(context.shape)} {tuple(attention.shape)} {context.dtype}, expected "
              f"({B}, {L}, {H}, {T}, {D // H}) and ({B}, {L}, {H}, {T}, {T}) float64")
        return 1
    valid = torch.arange(T).view(1, T) < n_valid.view(B, 1)
    reference = {"distilbert": distilbert_heads, "gpt2": gpt2_heads}.get(family, bert_heads)(cfg, tensors, ids, valid)
    worst_c = worst_a = 0.0
    for b in range(B):
        for l, (ctx, att) in enumerate(reference):
            worst_c = max(worst_c, relative(context[b, l], ctx[b]))
            worst_a = max(worst_a, relative(attention[b, l], att[b]))
    pad_mass = float(attention[:, :, :, :, :].masked_select(~valid.view(B, 1, 1, 1, T).expand_as(attention)).abs().sum()) if B else 0.0
    peak = float(attention.masked_select(valid.view(B, 1, 1, 1, T).expand_as(attention)).max())
    print(f"check: {family}: {B} samples (T={T}) x {L} layers x {H} heads: max relative deviation from the float64 reference: "
          f"context {worst_c:.2e}, attention {worst_a:.2e} (tolerance {args.tolerance:g}); attention on [PAD] keys {pad_mass:g}; "
          f"largest attention weight {peak:.3f}")
    return 0 if worst_c <= args.tolerance and worst_a <= args.tolerance and pad_mass == 0 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("layout")
    s.add_argument("model")
    s = sub.add_parser("perturb")
    s.add_argument("model")
    s.add_argument("out")
    s = sub.add_parser("check")
    s.add_argument("model")
    s.add_argument("dump")
    s.add_argument("--tolerance", type=float, default=1e-10)
    args = ap.parse_args()
    torch.set_num_threads(1)
    return {"layout": cmd_layout, "perturb": cmd_perturb, "check": cmd_check}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
