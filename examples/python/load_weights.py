#!/usr/bin/python3
"""load_weights.py: a paragon train job's weights in PyTorch, loaded as they are.

Fetches GET /api/v1/jobs/{id}/weights (or reads a file saved from it), builds the module the job's
spec describes, loads the file with load_state_dict(strict=True) and checks it against the job:

  an MLP   torch.nn.Sequential built the natural way from the spec: for each layer
           Linear(in, out), then for a hidden layer its activation module (ReLU,
           GELU(approximate="tanh"), Tanh, Sigmoid; none for "none") and Dropout(p) when
           the spec has dropout. Linear k is module k * (modules of a hidden layer):
           [784, 256, 256, 10] with relu gives keys 0.*, 2.*, 4.*; with dropout 0.*, 3.*, 6.*.
           On fashion-mnist (Debian's dataset-fashion-mnist), xor and idx files it prints the
           test accuracy and loss and checks them against the job's result (to 4 decimals).
  a gpt    transformers.GPT2LMHeadModel when transformers is importable, else GPT2 below:
           the same module tree and parameter names written out in plain torch. With
           --prompt it prints the greedy continuation and, for a job, checks it against
           paragond's own (POST /api/v1/jobs/{id}/generate at temperature 0).

Usage:
  load_weights.py JOB_ID [--prompt TEXT] [--max-tokens N] [--data-dir DIR]
  load_weights.py FILE.safetensors [--expect-accuracy A] [--prompt TEXT] ...
Environment: PARAGON_URL (default http://127.0.0.1:8080), PARAGON_TOKEN_FILE (default
data/token of this checkout). Exit status: 0 loaded and matching, 1 a mismatch, 2 anything else.
Run it with Debian's /usr/bin/python3 (python3-torch); no package beyond torch and numpy is needed.
"""
import argparse
import gzip
import json
import math
import os
import sys
import urllib.error
import urllib.request

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
FASHION_SYSTEM_DIR = "/usr/share/datasets/fashion-mnist"
FASHION_FILES = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


# ---- paragond ----------------------------------------------------------------------------------

def server():
    url = os.environ.get("PARAGON_URL", "http://127.0.0.1:8080").rstrip("/")
    token_file = os.environ.get("PARAGON_TOKEN_FILE", os.path.join(HERE, "..", "..", "data", "token"))
    headers = {}
    if os.path.exists(token_file):
        with open(token_file) as f:
            headers["Authorization"] = "Bearer " + f.read().strip()
    return url, headers


def request(path, body=None):
    url, headers = server()
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers = dict(headers, **{"Content-Type": "application/json"})
    req = urllib.request.Request(url + path, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.read()
    except urllib.error.HTTPError as e:  # paragond's {"error":{"code","message"}}
        try:
            error = json.loads(e.read())["error"]
            raise RuntimeError(f"{path}: {e.code} {error['code']}: {error['message']}") from None
        except (ValueError, KeyError):
            raise RuntimeError(f"{path}: HTTP {e.code}") from None


# ---- safetensors -------------------------------------------------------------------------------

def read_safetensors(data):
    """The tensors and metadata of a safetensors file's bytes (safetensors.torch.load reads the
    same; this keeps the example free of packages beyond torch and numpy)."""
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, t in header.items():
        if t["dtype"] != "F32":
            raise ValueError(f"{name}: dtype {t['dtype']}, expected F32")
        begin, end = t["data_offsets"]
        arr = np.frombuffer(data, dtype="<f4", count=(end - begin) // 4, offset=8 + n + begin)
        tensors[name] = torch.from_numpy(arr.reshape(t["shape"]).copy())
    return tensors, meta


# ---- the MLP -----------------------------------------------------------------------------------

ACTIVATIONS = {"relu": nn.ReLU, "gelu": lambda: nn.GELU(approximate="tanh"), "tanh": nn.Tanh,
               "sigmoid": nn.Sigmoid, "none": None}


def build_mlp(model):
    widths, act, p = model["layers"], ACTIVATIONS[model["activation"]], model.get("dropout", 0)
    modules = []
    for k in range(len(widths) - 1):
        modules.append(nn.Linear(widths[k], widths[k + 1]))
        if k + 2 < len(widths):
            if act:
                modules.append(act())
            if p > 0:
                modules.append(nn.Dropout(p))
    return nn.Sequential(*modules)


def read_idx(path):
    """An idx file (gzipped or not) as a numpy array."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def test_set(data_spec, data_dir):
    """The evaluation set paragon scores a job on, as float32 features and int64 labels; None
    where this example cannot rebuild it (spiral's points come from paragon's counter RNG)."""
    source = data_spec["source"]
    if source == "xor":  # the four corners, as engine/tensor/data.c makes them
        x = [[i >> 1, i & 1] for i in range(4)]
        return torch.tensor(x, dtype=torch.float32), torch.tensor([(i >> 1) ^ (i & 1) for i in range(4)])
    if source == "fashion-mnist":
        local = os.path.join(data_dir, "datasets", "fashion-mnist") if data_dir else None
        where = local if local and all(os.path.exists(os.path.join(local, f)) for f in FASHION_FILES) \
            else FASHION_SYSTEM_DIR
        images, labels = (os.path.join(where, f) for f in FASHION_FILES)
    elif source == "idx":
        if not data_dir:
            return None
        base = os.path.join(data_dir, "datasets")
        images, labels = os.path.join(base, data_spec["test_images"]), os.path.join(base, data_spec["test_labels"])
    else:
        return None
    pixels = read_idx(images)
    x = pixels.reshape(pixels.shape[0], -1).astype(np.float32) / np.float32(255)  # paragon's x / 255.0f
    return torch.from_numpy(x), torch.from_numpy(read_idx(labels).astype(np.int64))


def evaluate_mlp(module, spec, data_dir):
    found = test_set(spec["data"], data_dir)
    if found is None:
        return None
    x, y = found
    with torch.no_grad():
        out = module(x)
    accuracy = (out.argmax(dim=1) == y).double().mean().item()
    if spec["model"].get("loss") == "mse":
        loss = F.mse_loss(out.double(), F.one_hot(y, out.shape[1]).double()).item()  # over every output, as paragon
    else:
        loss = F.cross_entropy(out, y, reduction="none").double().mean().item()
    return accuracy, loss


# ---- the gpt -----------------------------------------------------------------------------------

class Conv1D(nn.Module):
    """transformers' Conv1D: y = x W + b with W [nx, nf] (in, out), as GPT-2 holds its matrices."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).reshape(*x.shape[:-1], self.nf)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Attention(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.n_head = H
        self.c_attn = Conv1D(3 * C, C)
        self.c_proj = Conv1D(C, C)

    def forward(self, x):
        B, T, C = x.shape
        heads = lambda t: t.reshape(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q, k, v = (heads(t) for t in self.c_attn(x).split(C, dim=2))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.n_head)
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")).softmax(dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.c_fc = Conv1D(4 * C, C)
        self.c_proj = Conv1D(C, 4 * C)

    def forward(self, x):
        return self.c_proj(gelu_new(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C, eps=1e-5)
        self.attn = Attention(C, H)
        self.ln_2 = nn.LayerNorm(C, eps=1e-5)
        self.mlp = MLP(C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    """GPT2LMHeadModel's module tree and names in plain torch (inference: no dropout modules,
    which hold no parameters). A tied head is the token table itself, as in transformers."""

    def __init__(self, vocab, context, C, n_layer, n_head, tie):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, C), wpe=nn.Embedding(context, C),
            h=nn.ModuleList(Block(C, n_head) for _ in range(n_layer)), ln_f=nn.LayerNorm(C, eps=1e-5)))
        self.lm_head = nn.Linear(C, vocab, bias=False)
        if tie:
            self.lm_head.weight = self.transformer.wte.weight

    def forward(self, idx):
        t = self.transformer
        x = t.wte(idx) + t.wpe(torch.arange(idx.shape[1]))
        for block in t.h:
            x = block(x)
        return self.lm_head(t.ln_f(x))


def build_gpt(model, vocab, tensors):
    """GPT2LMHeadModel from transformers when it is there, else GPT2 above; and a logits function."""
    try:
        import transformers
    except ImportError:
        transformers = None
    if transformers is None:
        module = GPT2(vocab, model["context"], model["d_model"], model["n_layer"], model["n_head"],
                      model["tie_embeddings"])
        module.load_state_dict(tensors, strict=True)
        return module, lambda idx: module(idx)
    config = transformers.GPT2Config(vocab_size=vocab, n_positions=model["context"], n_embd=model["d_model"],
                                     n_layer=model["n_layer"], n_head=model["n_head"], n_inner=4 * model["d_model"],
                                     activation_function="gelu_new", layer_norm_epsilon=1e-5,
                                     tie_word_embeddings=model["tie_embeddings"])
    module = transformers.GPT2LMHeadModel(config)
    # strict, but for the causal-mask buffers older transformers keep in the state_dict
    missing, unexpected = module.load_state_dict(tensors, strict=False)
    missing = [k for k in missing if not k.endswith((".attn.bias", ".attn.masked_bias"))]
    if missing or unexpected:
        raise RuntimeError(f"GPT2LMHeadModel: missing {missing}, unexpected {unexpected}")
    return module, lambda idx: module(idx).logits


def greedy(logits_of, vocab_chars, context, prompt, max_tokens):
    """The likeliest next character, max_tokens times, as paragon's generate reads the text: at
    most its context, starting over from the newer half once the text outgrows it."""
    index = {c: i for i, c in enumerate(vocab_chars)}
    tokens = [index[ord(ch)] for ch in prompt]
    window, out = list(tokens), []
    for i in range(max_tokens):
        with torch.no_grad():
            logits = logits_of(torch.tensor([window]))[0, -1]
        nxt = int(torch.argmax(logits))  # the first of equal maxima, as pgn_sample_token
        tokens.append(nxt)
        out.append(chr(vocab_chars[nxt]))
        window = window + [nxt] if len(window) < context else tokens[-max(context // 2, 1):]
    return "".join(out)


# ---- the check ---------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source", help="a job id (fetched from paragond) or a .safetensors file saved from /weights")
    ap.add_argument("--data-dir", help="paragond's --data-dir: datasets/fashion-mnist there wins, as in paragon")
    ap.add_argument("--expect-accuracy", type=float, help="with a file: the test_accuracy it must give")
    ap.add_argument("--prompt", help="a gpt: the text to continue greedily")
    ap.add_argument("--max-tokens", type=int, default=40)
    args = ap.parse_args()

    job = None
    if args.source.isdigit():
        data = request(f"/api/v1/jobs/{args.source}/weights")
        job = json.loads(request(f"/api/v1/jobs/{args.source}"))
        spec = job["spec"]
    else:
        with open(args.source, "rb") as f:
            data = f.read()
        spec = None
    tensors, meta = read_safetensors(data)
    if spec is None:
        spec = json.loads(meta["spec"])
    print(f"{len(tensors)} tensors; paragon says the module is {meta.get('pytorch')}")

    if spec["model"]["type"] == "mlp":
        module = build_mlp(spec["model"])
        module.load_state_dict(tensors, strict=True)
        module.eval()
        print(module)
        scored = evaluate_mlp(module, spec, args.data_dir)
        if scored is None:
            print(f"loaded; no test set for data source {spec['data']['source']!r} here, so no accuracy check")
            return 0
        accuracy, loss = scored
        want = job["result"].get("test_accuracy") if job and job.get("result") else args.expect_accuracy
        want_loss = job["result"].get("test_loss") if job and job.get("result") else None
        print(f"test_accuracy {accuracy:.4f}" + (f" (paragon: {want:.4f})" if want is not None else ""))
        print(f"test_loss {loss:.6f}" + (f" (paragon: {want_loss:.6f})" if want_loss is not None else ""))
        if want is not None and f"{accuracy:.4f}" != f"{want:.4f}":
            print("MISMATCH: the accuracy differs from paragon's", file=sys.stderr)
            return 1
        if want_loss is not None and abs(loss - want_loss) > 1e-4 * max(1.0, abs(want_loss)):
            print("MISMATCH: the loss differs from paragon's", file=sys.stderr)
            return 1
        return 0

    vocab = json.loads(meta["vocab"])["chars"]
    model = spec["model"]
    module, logits_of = build_gpt(model, len(vocab), tensors)
    module.eval()
    print(f"loaded into {type(module).__module__}.{type(module).__name__} (strict): "
          f"{sum(p.numel() for p in module.parameters())} parameters")
    if args.prompt:
        ours = greedy(logits_of, vocab, model["context"], args.prompt, args.max_tokens)
        print(f"greedy: {args.prompt!r} -> {ours!r}")
        if job:
            reply = json.loads(request(f"/api/v1/jobs/{args.source}/generate",
                                       {"prompt": args.prompt, "max_tokens": args.max_tokens, "temperature": 0}))
            theirs = reply["result"]["completion"]
            print(f"paragon: {args.prompt!r} -> {theirs!r}")
            if ours != theirs:
                print("MISMATCH: the greedy text differs from paragon's", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        print(f"load_weights.py: {e}", file=sys.stderr)
        sys.exit(2)
