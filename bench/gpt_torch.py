#!/usr/bin/python3
"""gpt_torch.py: the PyTorch reference for paragon's character-level GPT benchmark. It trains
the same model (a pre-LayerNorm GPT-2 as nanoGPT with bias=True and no dropout, tied head) with
the same optimizer (AdamW, decay on the Linear weight matrices only) and LR schedule on the same
data, so that the two can be compared in one run: ms/step, tokens/s and the validation loss
reached after the same number of steps. Prints one JSON line on stdout; progress goes to stderr.

The data pipeline (read_corpus, tokenize, split, eval_starts, and the window ranges drawn from
in train_batch) must stay identical to paragon's text data source (engine/tensor/): a change on
one side is a change on both. Only the random window starts differ: they come from torch's
generator here.

PyTorch runs from Debian's Python (/usr/bin/python3, torch 1.13). Unless --default-env is
given, OMP_WAIT_POLICY=passive and OPENBLAS_CORETYPE=SkylakeX are set (where not already set)
before torch is imported: with torch's defaults a step takes over twice as long here.

usage: /usr/bin/python3 bench/gpt_torch.py [--text FILE | --fortunes] [--steps N] [--sdpa] ...
       (--help lists every option)"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np

if '--default-env' not in sys.argv[1:]:
    os.environ.setdefault('OMP_WAIT_POLICY', 'passive')
    os.environ.setdefault('OPENBLAS_CORETYPE', 'SkylakeX')
import torch  # noqa: E402  (after the environment above, which torch reads when it loads)
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

FORTUNES_DIR = b'/usr/share/games/fortunes'


def log(msg):
    print(f'gpt_torch: {msg}', file=sys.stderr, flush=True)


# ---- data: must match paragon's text data source ---------------------------------------------

def read_corpus(text_path):
    """The corpus's bytes: the file text_path, or (None) the fortunes: every regular file (no
    symlink) directly in FORTUNES_DIR whose name has no '.', concatenated in byte order of names."""
    if text_path is not None:
        with open(text_path, 'rb') as f:
            return f.read()
    names = sorted(e.name for e in os.scandir(FORTUNES_DIR)
                   if e.is_file(follow_symlinks=False) and b'.' not in e.name)
    parts = []
    for name in names:
        with open(os.path.join(FORTUNES_DIR, name), 'rb') as f:
            parts.append(f.read())
    return b''.join(parts)


def tokenize(data):
    """(tokens int64, vocabulary size, 'utf-8' or 'bytes'): the characters are the UTF-8 code
    points when data decodes strictly, else the bytes; the vocabulary is their sorted set and a
    token is a character's index in it."""
    try:
        chars = np.frombuffer(data.decode('utf-8').encode('utf-32-le'), dtype=np.uint32)
        kind = 'utf-8'
    except UnicodeDecodeError:
        chars = np.frombuffer(data, dtype=np.uint8)
        kind = 'bytes'
    vocab, tokens = np.unique(chars, return_inverse=True)
    return torch.from_numpy(tokens.astype(np.int64)), len(vocab), kind


def split(tokens):
    """(train, val): the last n // 10 tokens are the validation split."""
    n_val = len(tokens) // 10
    return tokens[:len(tokens) - n_val], tokens[len(tokens) - n_val:]


def eval_starts(n_val, context, windows):
    """The fixed validation windows' starts, spread evenly over [0, n_val - context - 1]."""
    return torch.tensor([(i * (n_val - context - 1)) // windows for i in range(windows)])


def windows(tokens, starts, context):
    """(x, y) of shape (len(starts), context): y is x shifted one token on."""
    starts = starts.to(tokens.device)
    w = tokens[starts[:, None] + torch.arange(context + 1, device=tokens.device)]
    return w[:, :-1], w[:, 1:]


def train_batch(train, batch, context, gen):
    """batch windows of the train split, their starts uniform in [0, len(train) - context - 1]."""
    starts = torch.randint(0, len(train) - context, (batch,), generator=gen)
    return windows(train, starts, context)


# ---- model --------------------------------------------------------------------------------------

class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_head, context, sdpa):
        super().__init__()
        self.n_head, self.sdpa = n_head, sdpa
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)
        self.register_buffer('causal', torch.ones(context, context, dtype=torch.bool).tril(),
                             persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        hd = C // self.n_head
        q, k, v = (t.view(B, T, self.n_head, hd).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            att = att.masked_fill(~self.causal[:T, :T], float('-inf')).softmax(dim=-1)
            y = att @ v
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.c_fc = nn.Linear(d_model, 4 * d_model)
        self.c_proj = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate='tanh'))


class Block(nn.Module):
    def __init__(self, d_model, n_head, context, sdpa):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model, eps=1e-5)
        self.attn = CausalSelfAttention(d_model, n_head, context, sdpa)
        self.ln_2 = nn.LayerNorm(d_model, eps=1e-5)
        self.mlp = MLP(d_model)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab, n_layer, n_head, d_model, context, sdpa):
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Embedding(context, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_head, context, sdpa) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model, eps=1e-5)
        self.apply(init_weights)
        for name, p in self.named_parameters():
            if name.endswith('c_proj.weight'):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def init_weights(m):
    """nanoGPT's: Linear weights and embeddings N(0, 0.02), biases 0 (LayerNorm keeps 1 and 0)."""
    if isinstance(m, (nn.Linear, nn.Embedding)):
        nn.init.normal_(m.weight, mean=0.0, std=0.02)
    if isinstance(m, nn.Linear):
        nn.init.zeros_(m.bias)


def sdpa_available(wanted):
    if wanted and not hasattr(F, 'scaled_dot_product_attention'):
        log(f'torch {torch.__version__} has no scaled_dot_product_attention: '
            'explicit attention instead')
        return False
    return wanted


# ---- optimizer and schedule ---------------------------------------------------------------------

def make_optimizer(model, args):
    """AdamW; weight decay on the Linear weight matrices only (not on biases, LayerNorms or the
    embeddings). The single-tensor implementation: foreach is no faster on this CPU."""
    decay = [p for n, p in model.named_parameters() if n.endswith('.weight') and p.dim() == 2
             and not n.startswith(('wte.', 'wpe.'))]
    ids = {id(p) for p in decay}
    no_decay = [p for p in model.parameters() if id(p) not in ids]
    groups = [{'params': decay, 'weight_decay': args.weight_decay},
              {'params': no_decay, 'weight_decay': 0.0}]
    return torch.optim.AdamW(groups, lr=args.lr, betas=(args.beta1, args.beta2), eps=args.eps,
                             foreach=False)


def lr_at(t, args):
    """The learning rate of step t (0-based): linear warmup, then constant or cosine to min_lr."""
    if args.warmup > 0 and t < args.warmup:
        return args.lr * (t + 1) / args.warmup
    if args.schedule == 'cosine':
        span = args.steps - args.warmup
        progress = min((t - args.warmup) / (span - 1), 1.0) if span > 1 else 1.0
        return args.min_lr + (args.lr - args.min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))
    return args.lr


# ---- training and evaluation --------------------------------------------------------------------

def train_step(model, opt, train, gen, t, args):
    """One timed step: (loss, seconds)."""
    t0 = time.perf_counter()
    for g in opt.param_groups:
        g['lr'] = lr_at(t, args)
    x, y = train_batch(train, args.batch, args.context, gen)
    loss = model(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if args.clip_norm > 0:
        nn.utils.clip_grad_norm_(model.parameters(), args.clip_norm)
    opt.step()
    return loss.item(), time.perf_counter() - t0


@torch.no_grad()
def evaluate(model, val, args):
    """Mean cross-entropy over the eval windows' eval_windows * context predictions."""
    model.eval()
    starts = eval_starts(len(val), args.context, args.eval_windows)
    total = 0.0
    for i in range(0, len(starts), args.batch):
        x, y = windows(val, starts[i:i + args.batch], args.context)
        total += model(x, y).item() * y.numel()
    model.train()
    return total / (len(starts) * args.context)


def use_device(name):
    """The torch device; on CUDA, FP32 products stay FP32 (no TF32), paragon's arithmetic."""
    device = torch.device(name)
    if device.type == 'cuda':
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision('highest')
    return device


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], allow_abbrev=False)
    src = p.add_mutually_exclusive_group()
    src.add_argument('--text', metavar='PATH', help='train on this file')
    src.add_argument('--fortunes', action='store_true',
                     help='train on the fortunes (the default without --text)')
    for name, kind, default in (('n-layer', int, 4), ('n-head', int, 4), ('d-model', int, 128),
                                ('context', int, 64), ('batch', int, 32), ('steps', int, 200),
                                ('lr', float, 1e-3), ('weight-decay', float, 0.01),
                                ('beta1', float, 0.9), ('beta2', float, 0.999),
                                ('eps', float, 1e-8), ('warmup', int, 0), ('min-lr', float, 0.0),
                                ('clip-norm', float, 0.0), ('eval-windows', int, 128),
                                ('seed', int, 0), ('threads', int, 2), ('log-every', int, 10),
                                ('warmup-steps-timing', int, 3)):
        p.add_argument(f'--{name}', type=kind, default=default, help=f'(default {default})')
    p.add_argument('--schedule', choices=('constant', 'cosine'), default='constant')
    p.add_argument('--sdpa', action='store_true',
                   help='attention by F.scaled_dot_product_attention where torch has it')
    p.add_argument('--device', default='cpu',
                   help='where torch runs: cpu, or cuda (FP32 with TF32 off, as paragon computes)')
    p.add_argument('--default-env', action='store_true',
                   help="leave OMP_WAIT_POLICY and OPENBLAS_CORETYPE to torch's defaults")
    args = p.parse_args()
    if args.d_model % args.n_head:
        p.error('--d-model must be a multiple of --n-head')
    if args.steps < 1 or args.log_every < 1 or args.eval_windows < 1 or args.batch < 1:
        p.error('--steps, --log-every, --eval-windows and --batch must be positive')
    return args


def main():
    args = parse_args()
    begin = time.perf_counter()
    torch.set_num_threads(args.threads)
    tokens, vocab, kind = tokenize(read_corpus(args.text))
    train, val = split(tokens)
    device = use_device(args.device)
    train, val = train.to(device), val.to(device)
    if len(val) < args.context + 1:
        sys.exit(f'gpt_torch: the validation split ({len(val)} tokens) is shorter than '
                 f'context + 1')
    log(f'{len(tokens)} tokens ({kind}), vocab {vocab}, train {len(train)}, val {len(val)}')

    torch.manual_seed(args.seed)
    model = GPT(vocab, args.n_layer, args.n_head, args.d_model, args.context,
                sdpa_available(args.sdpa)).to(device)
    opt = make_optimizer(model, args)
    gen = torch.Generator().manual_seed(args.seed)
    losses, seconds = [], []
    for t in range(args.steps):
        loss, s = train_step(model, opt, train, gen, t, args)
        losses.append(loss)
        seconds.append(s)
        if (t + 1) % args.log_every == 0 or t + 1 == args.steps:
            log(f'step {t + 1}/{args.steps} loss {loss:.4f} {1000 * s:.1f} ms')
    timed = seconds[args.warmup_steps_timing:] or seconds
    median = statistics.median(timed)
    print(json.dumps({
        'params': sum(p.numel() for p in model.parameters()),
        'vocab': vocab,
        'steps': args.steps,
        'ms_per_step': 1000 * median,
        'ms_per_step_all': [round(1000 * s, 3) for s in seconds],
        'tokens_per_second': args.batch * args.context / median,
        'final_train_loss': statistics.fmean(losses[-args.log_every:]),
        'val_loss': evaluate(model, val, args),
        'torch_version': torch.__version__,
        'threads': torch.get_num_threads(),
        'device': str(device),
        'seconds': time.perf_counter() - begin,
    }))


if __name__ == '__main__':
    main()
