#!/usr/bin/env python3
"""PyTorch twin of triad's transformer (gpu/transformer.ts), for `triad bench` ratios only.

PyTorch is never a dependency of triad: the benchmarks run this script when a Python with torch
is at hand (`.venv-bench`, see bin/bench/torch-twin.ts) and report `torch: null` otherwise.

Reads one JSON job on stdin and writes one JSON object on stdout:

  job = {
    "threads": 2,                  # torch.set_num_threads (the thread count triad ran with)
    "seed": 0,
    "config": {...},               # triad's full TransformerConfig (fullConfig: every default filled)
    "tasks": [
      {"kind": "generate", "batch": 16, "promptTokens": 16, "newTokens": 8, "temperature": 0,
       "reps": 3},
      {"kind": "lora", "rank": 16, "alpha": 32, "targets": [...], "rows": 2, "seqLen": 512,
       "lr": 1e-5, "reps": 3},
      {"kind": "sft", "rows": B, "seqLen": T, "inputs": [...], "targets": [...], "mask": [...],
       "lr": 1e-4, "reps": 3},
      {"kind": "grpo", "rows": B, "seqLen": S, "tokens": [...], "lossMask": [...],
       "behaviorLogprobs": [...], "advantages": [...], "lr": 1e-4, "reps": 3}
    ]
  }

  out = {"torch": "2.x", "threads": n, "peakRssBytes": ..., "results": [{...}, ...]}

Every task's `wallMs` and `cpuMs` are the median over `reps` after `warmup` calls (default 2;
generation 1; both echoed in the result) (cpuMs: this
process's user + system time, all threads, `time.process_time`), in milliseconds.

The architecture is triad's: token embedding; per block pre-norm RMSNorm, a fused qkv projection
`x @ W` with W `[width, q + 2 kv]` (optional bias), optional per-head RMSNorm of q and k, rotary
positions in the rotate-half layout, grouped-query causal attention, the output projection; pre-norm
RMSNorm, a fused gate_up `[width, 2 mlpHidden]`, SwiGLU, down; final RMSNorm and the tied (or own)
output head `h @ E^T`. LoRA adapters sit on the seven projections as in triad: `y + (alpha / rank)
(x A) B` on each slice of the fused weights (the same FLOPs). AdamW is triad's (betas 0.9 / 0.95,
eps 1e-8, weight decay 0.01, global gradient-norm clip 1.0). Weights are random (std 0.02).
"""

import json
import math
import resource
import statistics
import sys
import time

import torch
import torch.nn.functional as F

BETAS = (0.9, 0.95)
EPS = 1e-8
WEIGHT_DECAY = 0.01
GRAD_CLIP = 1.0
EPS_LOW, EPS_HIGH, DUAL_C = 0.2, 0.28, 10.0  # GRPO-TCR defaults (gpu/grpo.ts)


def rms_norm(x, g, eps):
    """x / sqrt(mean(x^2) + eps) * g over the last axis."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g


def rotate_half(x):
    """[-x2, x1] for x = [x1, x2] on the last axis."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


try:
    F.scaled_dot_product_attention(
        torch.zeros(1, 2, 1, 2), torch.zeros(1, 1, 1, 2), torch.zeros(1, 1, 1, 2), enable_gqa=True
    )
    HAS_GQA = True
except (TypeError, RuntimeError):
    HAS_GQA = False


def attention(q, k, v, causal):
    """softmax(q k^T / sqrt(hd) + causal mask) v; q [B, h, T, hd], k and v [B, kv, L, hd]."""
    if HAS_GQA:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=q.shape[1] != k.shape[1])
    g = q.shape[1] // k.shape[1]
    if g > 1:
        k = k.repeat_interleave(g, dim=1)
        v = v.repeat_interleave(g, dim=1)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


class Twin:
    """triad's transformer with random weights; parameters as plain tensors in `x @ W` orientation."""

    def __init__(self, cfg, std=0.02):
        self.cfg = cfg
        d, h, kv, hd, f, vocab = (
            cfg["width"], cfg["heads"], cfg["kvHeads"], cfg["headDim"], cfg["mlpHidden"], cfg["vocabSize"]
        )
        self.q, self.kv = h * hd, kv * hd
        w = {"embed": torch.randn(vocab, d) * std}
        for i in range(cfg["layers"]):
            w[f"{i}.attn_norm"] = torch.ones(d)
            w[f"{i}.qkv"] = torch.randn(d, self.q + 2 * self.kv) * std
            if cfg["qkvBias"]:
                w[f"{i}.qkv_bias"] = torch.zeros(self.q + 2 * self.kv)
            if cfg["qkNorm"]:
                w[f"{i}.q_norm"] = torch.ones(hd)
                w[f"{i}.k_norm"] = torch.ones(hd)
            w[f"{i}.attn_out"] = torch.randn(self.q, d) * std
            w[f"{i}.mlp_norm"] = torch.ones(d)
            w[f"{i}.gate_up"] = torch.randn(d, 2 * f) * std
            w[f"{i}.down"] = torch.randn(f, d) * std
        w["final_norm"] = torch.ones(d)
        if not cfg["tiedEmbeddings"]:
            w["lm_head"] = torch.randn(vocab, d) * std
        self.w = w
        self.lora = None  # {"scale": s, "ab": {(layer, target): (A, B)}}
        scaling = cfg.get("ropeScaling") or {"type": "none"}
        inv = torch.tensor([cfg["ropeTheta"] ** (-2 * j / hd) for j in range(hd // 2)], dtype=torch.float64)
        if scaling["type"] == "linear":
            inv = inv / scaling["factor"]
        elif scaling["type"] != "none":
            raise ValueError(f"rope scaling {scaling['type']} is not in the twin")
        angles = torch.arange(cfg["contextLength"], dtype=torch.float64)[:, None] * inv[None, :]
        angles = torch.cat((angles, angles), dim=-1)
        self.cos = angles.cos().float()
        self.sin = angles.sin().float()

    def params(self):
        return list(self.w.values())

    def add_lora(self, rank, alpha, targets):
        """Adapters on every layer and target: A uniform in +-1/sqrt(in) [in, rank], B zeros [rank, out]."""
        d, f = self.cfg["width"], self.cfg["mlpHidden"]
        sizes = {
            "q_proj": (d, self.q), "k_proj": (d, self.kv), "v_proj": (d, self.kv), "o_proj": (self.q, d),
            "gate_proj": (d, f), "up_proj": (d, f), "down_proj": (f, d),
        }
        ab = {}
        for i in range(self.cfg["layers"]):
            for t in targets:
                n_in, n_out = sizes[t]
                bound = 1 / math.sqrt(n_in)
                a = ((torch.rand(n_in, rank) * 2 - 1) * bound).requires_grad_(True)
                b = torch.zeros(rank, n_out).requires_grad_(True)
                ab[(i, t)] = (a, b)
        self.lora = {"scale": alpha / rank, "ab": ab}
        return [m for pair in ab.values() for m in pair]

    def _lora(self, i, target, x, y):
        if self.lora is None or (i, target) not in self.lora["ab"]:
            return y
        a, b = self.lora["ab"][(i, target)]
        return y + ((x @ a) @ b) * self.lora["scale"]

    def hidden(self, ids, start=0, cache=None):
        """Final hidden states [B, T, width] of ids [B, T] at positions start.. (with a cache: after it)."""
        cfg, w = self.cfg, self.w
        eps, h, kvh, hd, f = cfg["normEps"], cfg["heads"], cfg["kvHeads"], cfg["headDim"], cfg["mlpHidden"]
        bsz, t = ids.shape
        x = F.embedding(ids, w["embed"])
        cos = self.cos[start : start + t]
        sin = self.sin[start : start + t]
        for i in range(cfg["layers"]):
            a = rms_norm(x, w[f"{i}.attn_norm"], eps)
            qkv = a @ w[f"{i}.qkv"]
            if cfg["qkvBias"]:
                qkv = qkv + w[f"{i}.qkv_bias"]
            q, k, v = qkv.split([self.q, self.kv, self.kv], dim=-1)
            q = self._lora(i, "q_proj", a, q)
            k = self._lora(i, "k_proj", a, k)
            v = self._lora(i, "v_proj", a, v)
            q = q.view(bsz, t, h, hd)
            k = k.view(bsz, t, kvh, hd)
            if cfg["qkNorm"]:
                q = rms_norm(q, w[f"{i}.q_norm"], eps)
                k = rms_norm(k, w[f"{i}.k_norm"], eps)
            q = q.transpose(1, 2)
            k = k.transpose(1, 2)
            v = v.view(bsz, t, kvh, hd).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            if cache is not None:
                ck, cv = cache[i]
                ck[:, :, start : start + t] = k
                cv[:, :, start : start + t] = v
                k, v = ck[:, :, : start + t], cv[:, :, : start + t]
            o = attention(q, k, v, causal=t > 1).transpose(1, 2).reshape(bsz, t, self.q)
            x = x + self._lora(i, "o_proj", o, o @ w[f"{i}.attn_out"])
            m = rms_norm(x, w[f"{i}.mlp_norm"], eps)
            gate, up = (m @ w[f"{i}.gate_up"]).split([f, f], dim=-1)
            gate = self._lora(i, "gate_proj", m, gate)
            up = self._lora(i, "up_proj", m, up)
            hidden = F.silu(gate) * up
            x = x + self._lora(i, "down_proj", hidden, hidden @ w[f"{i}.down"])
        return rms_norm(x, w["final_norm"], eps)

    def head(self, hs):
        """Logits hs @ W_out^T, W_out the embedding when tied."""
        return hs @ self.w["embed" if self.cfg["tiedEmbeddings"] else "lm_head"].t()


def timed(body, reps, warmup=2):
    """Median wall and CPU ms of `reps` calls of body after `warmup` calls (autograd and the
    optimizer's state settle over the first ones)."""
    for _ in range(warmup):
        body()
    wall, cpu = [], []
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        body()
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return {"wallMs": round(statistics.median(wall), 1), "cpuMs": round(statistics.median(cpu), 1),
            "warmup": warmup, "reps": reps}


def generate_task(model, task):
    """Generation with a KV cache: a prompt pass, then one token per step, newTokens in all (triad's `generate`)."""
    cfg = model.cfg
    bsz, p, n = task["batch"], task["promptTokens"], task["newTokens"]
    temperature = task.get("temperature", 0)
    gen = torch.Generator().manual_seed(1)
    prompt = torch.tensor([[(r * 31 + i * 7) % cfg["vocabSize"] for i in range(p)] for r in range(bsz)])

    def pick(logits):
        logp = torch.log_softmax(logits, dim=-1)
        if temperature == 0:
            tok = logits.argmax(-1)
        else:
            tok = torch.multinomial(torch.softmax(logits / temperature, dim=-1), 1, generator=gen)[:, 0]
        return tok, logp.gather(-1, tok[:, None])

    def run(steps):
        shape = (bsz, cfg["kvHeads"], p + steps, cfg["headDim"])
        cache = [(torch.empty(shape), torch.empty(shape)) for _ in range(cfg["layers"])]
        with torch.inference_mode():
            tok, _ = pick(model.head(model.hidden(prompt, 0, cache)[:, -1]))
            out = [tok]
            for s in range(1, steps):
                tok, _ = pick(model.head(model.hidden(tok[:, None], p + s - 1, cache)[:, -1]))
                out.append(tok)
        return out

    t = timed(lambda: run(n), task.get("reps", 3), warmup=1)
    tokens = bsz * n
    return {
        "kind": "generate", "batch": bsz, "promptTokens": p, "newTokens": n, "temperature": temperature, **t,
        "msPerStep": round(t["wallMs"] / n, 2),
        "tokensPerSecond": round(tokens / t["wallMs"] * 1000, 2),
    }


def adamw(params, lr):
    return torch.optim.AdamW(params, lr=lr, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY)


def optimizer_step(params, opt):
    torch.nn.utils.clip_grad_norm_(params, GRAD_CLIP)
    opt.step()
    opt.zero_grad(set_to_none=True)


def lora_task(model, task):
    """LoRA step: mean next-token cross-entropy over rows x seqLen tokens, backward, AdamW on the adapters."""
    cfg = model.cfg
    rows, t = task["rows"], task["seqLen"]
    for p in model.params():
        p.requires_grad_(False)
    adapters = model.add_lora(task["rank"], task["alpha"], task["targets"])
    opt = adamw(adapters, task.get("lr", 1e-5))
    ids = torch.tensor([[(r * 31 + i * 7919) % (cfg["vocabSize"] - 1) for i in range(t + 1)] for r in range(rows)])
    inputs, targets = ids[:, :-1], ids[:, 1:]

    def step():
        logits = model.head(model.hidden(inputs))
        loss = F.cross_entropy(logits.reshape(-1, cfg["vocabSize"]), targets.reshape(-1))
        loss.backward()
        optimizer_step(adapters, opt)

    r = timed(step, task.get("reps", 3), warmup=task.get("warmup", 2))
    model.lora = None
    tokens = rows * t
    return {
        "kind": "lora", "rank": task["rank"], "alpha": task["alpha"], "targets": task["targets"],
        "rows": rows, "seqLen": t, "trainedParameters": sum(a.numel() for a in adapters), **r,
        "tokensPerSecond": round(tokens / r["wallMs"] * 1000, 2),
    }


def sft_task(model, task):
    """Full-parameter SFT step: masked token-mean cross-entropy (head on the masked positions), AdamW."""
    cfg, rows, t = model.cfg, task["rows"], task["seqLen"]
    params = model.params()
    for p in params:
        p.requires_grad_(True)
    opt = adamw(params, task.get("lr", 1e-4))
    inputs = torch.tensor(task["inputs"]).view(rows, t)
    targets = torch.tensor(task["targets"])
    mask = torch.tensor(task["mask"], dtype=torch.float32)
    pos = mask.nonzero()[:, 0]
    wanted = targets[pos]
    loss_tokens = max(1.0, float(task.get("lossTokens", mask.sum().item())))

    def step():
        hs = model.hidden(inputs).reshape(rows * t, cfg["width"])[pos]
        logits = model.head(hs)
        logp = logits.gather(-1, wanted[:, None])[:, 0] - torch.logsumexp(logits, dim=-1)
        loss = -(logp * mask[pos]).sum() / loss_tokens
        loss.backward()
        optimizer_step(params, opt)

    r = timed(step, task.get("reps", 3), warmup=task.get("warmup", 2))
    return {"kind": "sft", "rows": rows, "seqLen": t, "lossTokens": loss_tokens, **r}


def grpo_task(model, task):
    """GRPO-TCR step: log-probs recomputed at trained tokens, token-level clipped surrogate with dual
    clip against the behavior log-probs and given advantages, token-mean, AdamW (gpu/rl-step.ts)."""
    cfg, rows, s = model.cfg, task["rows"], task["seqLen"]
    temperature = task.get("temperature", 1.0)
    params = model.params()
    for p in params:
        p.requires_grad_(True)
    opt = adamw(params, task.get("lr", 1e-4))
    tokens = torch.tensor(task["tokens"]).view(rows, s)
    inputs, targets = tokens[:, :-1], tokens[:, 1:].reshape(-1)
    lmask = torch.tensor(task["lossMask"], dtype=torch.float32).view(rows, s)[:, 1:].reshape(-1)
    behavior = torch.tensor(task["behaviorLogprobs"], dtype=torch.float32).view(rows, s)[:, 1:].reshape(-1)
    adv = torch.tensor(task["advantages"], dtype=torch.float32).view(rows, s)[:, 1:].reshape(-1)
    pos = lmask.nonzero()[:, 0]
    wanted, beh, a, m = targets[pos], behavior[pos], adv[pos], lmask[pos]

    def step():
        hs = model.hidden(inputs).reshape(rows * (s - 1), cfg["width"])[pos]
        logits = model.head(hs) / temperature
        lse = torch.logsumexp(logits, dim=-1)
        logp = logits.gather(-1, wanted[:, None])[:, 0] - lse
        with torch.no_grad():  # the entropy metric, as triad's step reports it
            logsm = logits.detach() - lse.detach()[:, None]
            _entropy = -(logsm.exp() * logsm).sum(-1).mul(m).sum() / m.sum().clamp(min=1)
        ratio = torch.exp(logp - beh)
        pg = torch.maximum(-a * ratio, -a * ratio.clamp(1 - EPS_LOW, 1 + EPS_HIGH))
        token_loss = torch.where(a < 0, torch.minimum(pg, -DUAL_C * a), pg)
        loss = (token_loss * m).sum() / m.sum().clamp(min=1)
        loss.backward()
        optimizer_step(params, opt)

    r = timed(step, task.get("reps", 3), warmup=task.get("warmup", 2))
    return {"kind": "grpo", "rows": rows, "seqLen": s, "trainedTokens": int(m.sum().item()), **r}


TASKS = {"generate": generate_task, "lora": lora_task, "sft": sft_task, "grpo": grpo_task}


def main():
    job = json.load(sys.stdin)
    threads = int(job["threads"])
    torch.set_num_threads(threads)
    torch.manual_seed(int(job.get("seed", 0)))
    model = Twin(job["config"])
    results = []
    for task in job["tasks"]:
        results.append(TASKS[task["kind"]](model, task))
    json.dump(
        {
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "gqaKernel": HAS_GQA,
            "peakRssBytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "results": results,
        },
        sys.stdout,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
