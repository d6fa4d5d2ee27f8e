"""Reference embeddings and token ids from onnxruntime and HuggingFace `tokenizers`, for the
parity tests of `crates/minilm` (`testdata/minilm-parity.json`, and the 20,813-string
MetaTool parity file `wordpiece_tests.rs` reads).

Runs the same int8 ONNX graph on onnxruntime (one thread) with the Python `tokenizers`
package loading the same tokenizer.json, and does what sentence-transformers does for
all-MiniLM-L6-v2: truncate to 256 tokens, mean-pool the last hidden state over the
attention mask, L2-normalise. Also, optionally, a plain-numpy fp32 BERT over the
safetensors weights, to see what int8 quantisation costs.

Usage: reference.py MODEL_DIR CATALOGUE QUERIES OUT_DIR
MODEL_DIR is what `scripts/fetch-model --reference` writes.
Writes OUT_DIR/strings.json (the strings), OUT_DIR/tokens.json (ids per string) and
OUT_DIR/all_tokens.json (every tool text and query with its ids) and
OUT_DIR/embeddings.json (the first 50 strings' vectors, onnxruntime and numpy fp32).
"""

import json
import struct
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

MAX_TOKENS = 256


def strings_for_parity(catalogue, queries):
    """Tool texts (as the prototype embeds them) and every 97th query, plus hand-made
    edge cases: accents, CJK, emoji, long words, punctuation, an over-long text."""
    tools = json.loads(Path(catalogue).read_text())["tools"]
    out = [f"{t['name']}: {t['description']}" for t in tools]
    lines = Path(queries).read_text().splitlines()
    out += [json.loads(l)["query"] for l in lines[::97]]
    out += [
        "check my dotenv",
        "Café naïve résumé — Ünïcödé ß ẞ",
        "東京の天気は? 北京 weather",
        "emoji 🚀🔥 test ☕",
        "supercalifragilisticexpialidocious antidisestablishmentarianism",
        "x" * 150,
        "URL: https://example.com/a_b-c?d=e&f=g#h",
        "snake_case_name camelCaseName kebab-case-name",
        "tab\tand\nnewline\r\nand\u00a0nbsp\u200bzero-width",
        "  leading and trailing spaces  ",
        "",
        "don't can't won't it's",
        "C++ C# .NET node.js",
        "word " * 400,
    ]
    return out


def ort_session(model):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])


def embed_ort(sess, ids):
    ids = np.array([ids], dtype=np.int64)
    mask = np.ones_like(ids)
    (hidden,) = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
    v = hidden[0].mean(axis=0)
    return v / max(np.linalg.norm(v), 1e-12)


def load_safetensors(path):
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        dtype = {"F32": np.float32, "I64": np.int64}[meta["dtype"]]
        a, b = meta["data_offsets"]
        out[name] = np.frombuffer(raw[base + a : base + b], dtype=dtype).reshape(meta["shape"])
    return out


def embed_fp32(w, ids):
    """BERT forward in numpy (absolute positions, 6 layers, 12 heads, gelu-erf)."""
    from math import erf, sqrt

    p = lambda k: w.get(k, w.get("bert." + k))
    n = len(ids)
    x = p("embeddings.word_embeddings.weight")[ids] + p("embeddings.position_embeddings.weight")[:n] + p("embeddings.token_type_embeddings.weight")[0]

    def ln(x, pre):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-12) * p(pre + ".weight") + p(pre + ".bias")

    lin = lambda x, pre: x @ p(pre + ".weight").T + p(pre + ".bias")
    verf = np.vectorize(erf)
    x = ln(x, "embeddings.LayerNorm")
    for i in range(6):
        pre = f"encoder.layer.{i}."
        q, k, v = (lin(x, pre + "attention.self." + t).reshape(n, 12, 32).transpose(1, 0, 2) for t in ("query", "key", "value"))
        s = q @ k.transpose(0, 2, 1) / sqrt(32)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        a = (s @ v).transpose(1, 0, 2).reshape(n, 384)
        x = ln(x + lin(a, pre + "attention.output.dense"), pre + "attention.output.LayerNorm")
        h = lin(x, pre + "intermediate.dense")
        h = 0.5 * h * (1 + verf(h / sqrt(2)))
        x = ln(x + lin(h, pre + "output.dense"), pre + "output.LayerNorm")
    v = x.mean(axis=0)
    return v / max(np.linalg.norm(v), 1e-12)


def main():
    models, catalogue, queries, out = (Path(a) for a in sys.argv[1:5])
    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer.from_file(str(models / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(MAX_TOKENS)
    strings = strings_for_parity(catalogue, queries)
    ids = [tok.encode(s).ids for s in strings]
    (out / "strings.json").write_text(json.dumps(strings, ensure_ascii=False))
    (out / "tokens.json").write_text(json.dumps(ids))
    # Every tool text and every query too: token parity on the whole evaluation set.
    tools = json.loads(Path(catalogue).read_text())["tools"]
    every = [f"{t['name']}: {t['description']}" for t in tools]
    every += [json.loads(l)["query"] for l in Path(queries).read_text().splitlines() if l.strip()]
    (out / "all_tokens.json").write_text(json.dumps({"strings": every, "ids": [e.ids for e in tok.encode_batch(every)]}, ensure_ascii=False))
    sess = ort_session(models / "model.onnx")
    w = load_safetensors(models / "model.safetensors")
    # 50 strings: 25 tool texts, 25 queries and edge cases from the end of the list.
    pick = list(range(0, 199, 8))[:25] + list(range(len(strings) - 25, len(strings)))
    emb = {"index": pick, "ort_int8": [], "numpy_fp32": []}
    for i in pick:
        emb["ort_int8"].append(embed_ort(sess, ids[i]).tolist())
        emb["numpy_fp32"].append(embed_fp32(w, ids[i]).tolist())
    (out / "embeddings.json").write_text(json.dumps(emb))
    cos = [float(np.dot(a, b)) for a, b in zip(emb["ort_int8"], emb["numpy_fp32"])]
    print(f"{len(strings)} strings tokenised; int8 (ort) vs fp32 (numpy) cosine min {min(cos):.4f} mean {np.mean(cos):.4f}")


if __name__ == "__main__":
    main()
