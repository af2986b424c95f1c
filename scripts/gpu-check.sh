#!/usr/bin/env bash
# gpu-check.sh: paragon's check on a lent NVIDIA machine (the device tool), in one call.
#
#   scripts/gpu-check.sh --pack   here, on Debian without a GPU: builds a portable release of
#                                 paragon in build-gpu/ and gathers into .gpu/ what the device
#                                 machine lacks (paragon, the libraries it links beyond glibc, the
#                                 fortunes, Fashion-MNIST, HVM2's CUDA builds of the peer programs
#                                 where nvcc and ../shared/peers/hvm2 are here)
#   scripts/gpu-check.sh --expect here: gpt-small's 20-step weights SHA-256 by the host reference's
#                                 bits, into scripts/gpu-check.expected (minutes on two cores)
#   scripts/gpu-check.sh          there, from the repository root, with .gpu carried: checks bits
#                                 against the host reference and times paragon against PyTorch on
#                                 CUDA (FP32, TF32 off) and HVM2's CUDA runtime in the same run
#
# Every step has its own time limit and the whole stays within about 8 minutes; a step that
# fails is a row saying so, not the end of the check. Logs and JSON go to $OUT (the device tool's
# folder that comes back) or ./gpu-check-out; the table is printed last.
set -uo pipefail
cd "$(dirname "$0")/.."
PACK=.gpu

pack() {
    set -e
    if [ ! -f build-gpu/build.ninja ]; then
        # x86-64-v3 (AVX2, FMA): any machine a GPU is lent in has it, and without FMA every fma()
        # of the host reference is a libm call (the host ran 30x slower there)
        meson setup build-gpu --buildtype=release -Dnative=false -Dc_args=-march=x86-64-v3 >/dev/null
    fi
    ninja -C build-gpu paragon >/dev/null
    # everything afresh but HVM2's CUDA builds, which take minutes each and change only with
    # the peer (remove .gpu/hvm2 to rebuild them)
    mkdir -p "$PACK" && find "$PACK" -mindepth 1 -maxdepth 1 ! -name hvm2 -exec rm -rf {} +
    mkdir -p "$PACK/lib" "$PACK/data/datasets" "$PACK/hvm2"
    cp build-gpu/paragon "$PACK/"
    # the shared libraries beyond glibc's own (the device machine runs another distribution)
    ldd build-gpu/paragon | awk '/=> \// {print $3}' |
        grep -v -E '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux[^/]*)\.so' |
        while read -r lib; do cp -L "$lib" "$PACK/lib/"; done
    tar -C "$PACK" -cJf "$PACK/lib.tar.xz" lib && rm -r "$PACK/lib" # the tree that travels: 64 MiB
    cp -r /usr/share/datasets/fashion-mnist "$PACK/data/datasets/" # where --data-dir looks
    mkdir -p "$PACK/fortunes"
    find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.*' -exec cp {} "$PACK/fortunes/" \;
    local peer=../shared/peers/hvm2
    if [ -x "$peer/build.sh" ] && command -v nvcc >/dev/null; then
        for p in $HVM2_PROGRAMS; do
            local bin
            [ -x "$PACK/hvm2/$p" ] && [ -f "$PACK/hvm2/$p.expected" ] && continue
            bin=$("$peer/build.sh" "$peer/programs/$p.hvm" cu 2>/dev/null) && strip -o "$PACK/hvm2/$p" "$bin" &&
                cp "$peer/programs/$p.hvm" "$peer/programs/$p.expected" "$PACK/hvm2/"
        done
    else
        echo "gpu-check: no nvcc or no $peer here: the inet rows will have no HVM2 figures" >&2
    fi
    grep -qx "/$PACK/" .git/info/exclude 2>/dev/null || echo "/$PACK/" >>.git/info/exclude
    du -sh "$PACK"
    echo "carry $PACK; run: scripts/gpu-check.sh"
}

# The peer programs for the inet rows (issue 28's): HVM2's CUDA runtime runs each beside paragon.
HVM2_PROGRAMS="sum_tree_d22 stress_10 sort_bitonic_16 fib32"

# small_spec FILE: examples/jobs/gpt-small.json cut to the 20 steps whose weights are checked
small_spec() {
    python3 - "$1" <<'EOF'
import json, sys
spec = json.load(open('examples/jobs/gpt-small.json'))
spec.update(steps=20, log_every=5, eval_every=20, eval_windows=32, checkpoint_every=20)
json.dump(spec, open(sys.argv[1], 'w'))
EOF
}

# Here: the weights SHA-256 of gpt-small's 20 steps by the host reference's bits (on an OpenCL
# CPU device, which gives the same bits in minutes where the host takes longer), into
# scripts/gpu-check.expected, which the device run compares with. Rerun when the kernels' bits
# change (docs/architecture.md, "Determinism").
expect() {
    set -e
    [ -x build-gpu/paragon ] || { echo "gpu-check: build-gpu/paragon missing: run --pack first" >&2; exit 2; }
    local tmp sha dev
    tmp=$(mktemp -d)
    small_spec "$tmp/small.json"
    dev=${GPU_CHECK_EXPECT_DEVICE:-auto}
    build-gpu/paragon run "$tmp/small.json" --device "$dev" --checkpoint-dir "$tmp/ck" --json >"$tmp/out.json"
    sha=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["weights_sha256"])' "$tmp/out.json")
    printf '%s %s %s\n' gpt-small-20 "$sha" \
        "# $dev, $(git rev-parse --short HEAD), $(date -u +%Y-%m-%d): scripts/gpu-check.sh --expect" \
        >scripts/gpu-check.expected
    rm -rf "$tmp"
    cat scripts/gpu-check.expected
}

[ "${1:-}" = --pack ] && { pack; exit; }
[ "${1:-}" = --expect ] && { expect; exit; }

# ---- on the device machine ------------------------------------------------------------------
OUT=${OUT:-gpu-check-out}
mkdir -p "$OUT"
LOG="$OUT/gpu-check.log"
: >"$LOG"
[ -x "$PACK/paragon" ] || { echo "gpu-check: $PACK/paragon missing: run scripts/gpu-check.sh --pack here and carry $PACK" >&2; exit 2; }
mkdir -p /tmp/paragon-gpu && tar -C /tmp/paragon-gpu -xJf "$PACK/lib.tar.xz"
export LD_LIBRARY_PATH="/tmp/paragon-gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
P="$PWD/$PACK/paragon"
DATA="$PWD/$PACK/data"
# a pack made before the datasets/ level: put it where --data-dir looks
[ -d "$DATA/fashion-mnist" ] && mkdir -p "$DATA/datasets" && mv "$DATA/fashion-mnist" "$DATA/datasets/"
# GPU_CHECK_SECTIONS: which parts run (all of them by default)
SECTIONS=" ${GPU_CHECK_SECTIONS:-gemm train gpt small inet} "
want() { [[ $SECTIONS == *" $1 "* ]]; }
ROWS="$OUT/rows.tsv"
: >"$ROWS"
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$ROWS"; }
log() { echo "== $*" | tee -a "$LOG" >&2; }
# step LIMIT_S NAME CMD...: runs CMD with its output in $OUT/NAME.out (stderr in the log)
step() {
    local limit=$1 name=$2
    shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" >"$OUT/$name.out" 2>>"$LOG"
    local rc=$?
    log "$name: exit $rc in $((SECONDS - t0)) s"
    return $rc
}
# same A B: whether two weights SHA-256 are equal (yes/no), "?" when either run gave none
same() { if [ "$1" = - ] || [ "$2" = - ]; then echo "?"; elif [ "$1" = "$2" ]; then echo yes; else echo no; fi; }
# jget FILE [KEY=VALUE ...] KEY...: a figure from a JSON result ({"rows": [...]}, a list of rows,
# or one object): the first row matching every KEY=VALUE, then the keys; "-" when absent.
jget() { python3 -c 'import json,sys
try:
    d=json.load(open(sys.argv[1]))
except Exception:
    print("-"); sys.exit()
args=sys.argv[2:]
filt=[a.split("=",1) for a in args if "=" in a]
if isinstance(d,dict) and "rows" in d: d=d["rows"]
if isinstance(d,list): d=next((r for r in d if all(str(r.get(k))==v for k,v in filt)),{})
for k in (a for a in args if "=" not in a): d=d.get(k) if isinstance(d,dict) else None
print("-" if d is None else "yes" if d is True else "no" if d is False else f"{d:.4g}" if isinstance(d,float) else d)' "$@"; }

log "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee -a "$LOG"
GPU_NAME=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)

# NVIDIA's OpenCL through the ICD loader we carry: the image may have no vendors file.
if ! grep -qs nvidia /etc/OpenCL/vendors/*.icd; then
    lib=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/ {print $NF; exit}')
    [ -n "$lib" ] || lib=$(find / -name 'libnvidia-opencl.so.1' -not -path '*/proc/*' 2>/dev/null | head -1)
    if [ -n "$lib" ]; then
        mkdir -p /tmp/ocl-vendors && echo "$lib" >/tmp/ocl-vendors/nvidia.icd
        export OCL_ICD_VENDORS=/tmp/ocl-vendors
        log "OpenCL: a vendors file for $lib"
    else
        log "OpenCL: no libnvidia-opencl.so.1 found"
    fi
fi
# the fortunes where paragon and gpt_torch.py read them (engine/tensor/corpus.c)
if [ ! -d /usr/share/games/fortunes ]; then
    mkdir -p /usr/share/games/fortunes && cp "$PACK"/fortunes/* /usr/share/games/fortunes/
fi

step 60 devices "$P" devices --json
# GPU_CHECK_DEVICE=ID runs the check on another device (a dry run on pocl, before a lease)
GPU=${GPU_CHECK_DEVICE:-}
[ -n "$GPU" ] || GPU=$(python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); d=d.get("devices",d) if isinstance(d,dict) else d
print(next((x["id"] for x in d if x.get("type")=="gpu"),""))' "$OUT/devices.out" 2>/dev/null)
if [ -z "$GPU" ]; then
    log "no OpenCL GPU: see $OUT/devices.out and the log"
    cat "$OUT/devices.out" "$LOG" | tail -40
    exit 1
fi
python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); d=d.get("devices",d) if isinstance(d,dict) else d
g=next(x for x in d if x["id"]==sys.argv[2]); print(json.dumps(g.get("profile"),indent=1))' "$OUT/devices.out" "$GPU" >>"$LOG"
FAMILIES=$(python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); d=d.get("devices",d) if isinstance(d,dict) else d
f=next(x for x in d if x["id"]==sys.argv[2])["profile"]["families"]
print("/".join(f[g]["family"] for g in ("gemm","rows","inet")))' "$OUT/devices.out" "$GPU" 2>/dev/null)
log "GPU $GPU ($GPU_NAME), kernel families gemm/rows/inet ${FAMILIES:-?}"

# ---- GEMM: paragon's gemm suite (bits checked against the host per case) and torch.mm --------
# on the GPU's profile (the gpu family's shapes), and the cpu family's at 1024 for before/after
if want gemm; then
step 150 gemm "$P" bench --suite gemm --device "$GPU" --repeats 3 --json --cases N=1024,N=2048,TN1024,NT1024,fwd1,dW1,dX2
# apart: the host reference takes seconds for each of these (minutes on two cores)
step 150 gemm_large "$P" bench --suite gemm --device "$GPU" --repeats 3 --json --cases N=4096,TN4096,NT4096
# gemm CASE KEY: a figure of either step's rows
gemm() { local v; v=$(jget "$OUT/gemm.out" case="$1" "$2"); [ "$v" = - ] && v=$(jget "$OUT/gemm_large.out" case="$1" "$2"); echo "$v"; }
step 60 gemm_cpu "$P" bench --suite gemm --device "$GPU" --repeats 3 --json --kernels cpu --cases N=1024
cat >"$OUT/torch_mm.py" <<'EOF'
import json, torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision('highest')

def timed(f, reps):
    for _ in range(3): f()
    torch.cuda.synchronize()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    times = []
    for _ in range(5):
        ev[0].record()
        for _ in range(reps): f()
        ev[1].record(); torch.cuda.synchronize()
        times.append(ev[0].elapsed_time(ev[1]) / 1e3 / reps)
    return sorted(times)[2]

def operands(m, n, k, ta, tb):
    a = torch.randn(*((k, m) if ta else (m, k)), device='cuda')
    b = torch.randn(*((n, k) if tb else (k, n)), device='cuda')
    return lambda: (a.t() if ta else a) @ (b.t() if tb else b)

rows = []
for n, ta, tb in ((1024, 0, 0), (2048, 0, 0), (4096, 0, 0), (1024, 1, 0), (1024, 0, 1), (4096, 1, 0), (4096, 0, 1)):
    s = timed(operands(n, n, n, ta, tb), 50 if n <= 2048 else 10)
    rows.append({'n': n, 'transpose': 'TN' if ta else 'NT' if tb else 'NN', 'gflops': 2 * n**3 / s / 1e9})
# the MLP's shapes (batch 128): a forward, a weight gradient, an input gradient
for name, m, n, k, ta, tb in (('fwd1', 128, 256, 784, 0, 0), ('dW1', 784, 256, 128, 1, 0), ('dX2', 128, 256, 256, 0, 1)):
    s = timed(operands(m, n, k, ta, tb), 200)
    rows.append({'case': name, 'gflops': 2 * m * n * k / s / 1e9})
print(json.dumps(rows))
EOF
step 90 torch_mm python3 "$OUT/torch_mm.py"
for n in 1024 2048 4096; do
    row "SGEMM ${n}^3 NN (GFLOP/s)" "$(gemm N=$n gflops)" \
        "$(jget "$OUT/torch_mm.out" n=$n transpose=NN gflops)" "$(gemm N=$n bit_identical)" ""
done
for n in 1024 4096; do
    for v in TN NT; do
        row "SGEMM ${n}^3 $v (GFLOP/s)" "$(gemm $v$n gflops)" \
            "$(jget "$OUT/torch_mm.out" n=$n transpose=$v gflops)" "$(gemm $v$n bit_identical)" \
            "$([ $v = TN ] && echo "A^T B, as weight gradients" || echo "A B^T, as input gradients")"
    done
done
row "SGEMM 1024^3 NN, cpu family (GFLOP/s)" "$(jget "$OUT/gemm_cpu.out" case=N=1024 gflops)" \
    "$(jget "$OUT/torch_mm.out" n=1024 transpose=NN gflops)" "$(jget "$OUT/gemm_cpu.out" case=N=1024 bit_identical)" \
    "before: the pocl-shaped kernels"
for c in fwd1 dW1 dX2; do
    row "SGEMM MLP $c (GFLOP/s)" "$(jget "$OUT/gemm.out" case=$c gflops)" "$(jget "$OUT/torch_mm.out" case=$c gflops)" \
        "$(jget "$OUT/gemm.out" case=$c bit_identical)" "batch 128"
done

fi

# ---- the Fashion MLP: the train suite on the GPU and on the host (weights SHA-256) -----------
if want train; then
step 150 train_gpu "$P" bench --suite train --device "$GPU" --data-dir "$DATA" --json
step 150 train_host "$P" bench --suite train --device host --data-dir "$DATA" --json
step 120 mlp_torch python3 bench/mlp_torch.py --device cuda --epochs 3 --data "$DATA/datasets/fashion-mnist"
sg=$(jget "$OUT/train_gpu.out" case=fashion-mlp weights_sha256)
sh=$(jget "$OUT/train_host.out" case=fashion-mlp weights_sha256)
row "Fashion MLP (s/epoch)" "$(jget "$OUT/train_gpu.out" case=fashion-mlp seconds_per_epoch)" \
    "$(jget "$OUT/mlp_torch.out" seconds_per_epoch)" "$(same "$sg" "$sh")" "sha ${sg:0:12}"

fi

# ---- the char-GPT: the gpt suite (ms/step, generation) and 3 steps on host and GPU -----------
# (the host reference takes seconds a step: the weights after 3 steps are the bit check)
if want gpt; then
step 180 gpt_gpu "$P" bench --suite gpt --device "$GPU" --json
step 120 gpt_torch python3 bench/gpt_torch.py --device cuda --steps 50 --warmup-steps-timing 10
python3 - "$OUT/steps.json" <<'EOF'
import json, sys
spec = json.load(open('examples/jobs/char-gpt.json'))
spec.update(steps=3, log_every=1, eval_every=3, eval_windows=32, checkpoint_every=3)
json.dump(spec, open(sys.argv[1], 'w'))
EOF
step 120 gpt3_gpu "$P" run "$OUT/steps.json" --device "$GPU" --json
step 200 gpt3_host "$P" run "$OUT/steps.json" --device host --json
sg=$(jget "$OUT/gpt3_gpu.out" weights_sha256)
sh=$(jget "$OUT/gpt3_host.out" weights_sha256)
row "char-GPT (ms/step)" "$(jget "$OUT/gpt_gpu.out" case=char-gpt ms_per_step)" "$(jget "$OUT/gpt_torch.out" ms_per_step)" \
    "$(same "$sg" "$sh")" "3-step sha ${sg:0:12}, host $(jget "$OUT/gpt3_host.out" seconds) s"
row "generation (chars/s)" "$(jget "$OUT/gpt_gpu.out" case=generate characters_per_second)" "-" "-" ""

fi

# ---- gpt-small (nanoGPT's Shakespeare-character size): 20 steps on the GPU against the host
# reference's weights, recorded beforehand (its 20 steps take the host minutes: --expect) --------
if want small; then
small_spec "$OUT/small.json"
step 120 small_gpu "$P" run "$OUT/small.json" --device "$GPU" --json
step 150 small_torch python3 bench/gpt_torch.py --device cuda --n-layer 6 --n-head 6 --d-model 384 --context 256 \
    --batch 64 --steps 30 --warmup-steps-timing 10 --lr 1e-3 --beta2 0.99 --weight-decay 0.1 --clip-norm 1 \
    --eval-windows 32 --log-every 5
sg=$(jget "$OUT/small_gpu.out" weights_sha256)
sh=$(awk '$1 == "gpt-small-20" {print $2}' scripts/gpu-check.expected 2>/dev/null)
row "gpt-small (ms/step)" "$(jget "$OUT/small_gpu.out" ms_per_step)" "$(jget "$OUT/small_torch.out" ms_per_step)" \
    "$(same "$sg" "${sh:--}")" "20-step sha ${sg:0:12}; launches/step $(jget "$OUT/small_gpu.out" launches_per_step)"

fi

# ---- interaction nets: paragon's reducer against HVM2's CUDA runtime on the same GPU ---------
want inet && for p in $HVM2_PROGRAMS; do
    f="$PACK/hvm2/$p.hvm"
    [ -f "$f" ] || continue
    step 60 "inet_$p" "$P" run "$f" --device "$GPU" --json
    step 60 "hvm2_$p" "$PACK/hvm2/$p"
    want=$(awk '/^Result:/ {print $2}' "$PACK/hvm2/$p.expected")
    itrs=$(awk '/ITRS/ {print $3}' "$PACK/hvm2/$p.expected")
    got=$(jget "$OUT/inet_$p.out" normal_form)
    gi=$(jget "$OUT/inet_$p.out" interactions)
    hm=$(awk '/MIPS/ {print $3}' "$OUT/hvm2_$p.out")
    hr=$(awk '/^Result:/ {print $2}' "$OUT/hvm2_$p.out")
    row "inet $p (MIPS)" "$(jget "$OUT/inet_$p.out" mips)" "${hm:--}" \
        "$([ "$got" = "$want" ] && [ "$gi" = "$itrs" ] && echo yes || echo no)" \
        "HVM2 result $([ "$hr" = "$want" ] && echo ok || echo "${hr:-none}"); own kernel $(jget "$OUT/inet_$p.out" compiled)"
done
# training as nets (paragon alone: HVM2 has no pgl): the host's value and count
if want inet; then
    step 120 inet_train_fashion "$P" run examples/inet/train_fashion.pgl --device "$GPU" --json
    want_v=$(sed -n 's/^Result: //p' examples/inet/train_fashion.expected)
    want_i=$(awk '/ITRS/ {print $3}' examples/inet/train_fashion.expected)
    row "inet train_fashion.pgl (MIPS)" "$(jget "$OUT/inet_train_fashion.out" mips)" "-" \
        "$([ "$(jget "$OUT/inet_train_fashion.out" value)" = "$want_v" ] &&
            [ "$(jget "$OUT/inet_train_fashion.out" interactions)" = "$want_i" ] && echo yes || echo no)" \
        "0.7 MIPS before the gpu family (H200)"
fi

# ---- the table ---------------------------------------------------------------------------------
# the device tool brings back 8 files: everything but the log and the table in one archive
tar -C "$OUT" -czf "$OUT/outputs.tgz" --exclude outputs.tgz --exclude gpu-check.log . 2>/dev/null
echo
echo "paragon on $GPU_NAME ($GPU; kernel families gemm/rows/inet ${FAMILIES:-?}), $(date -u +%Y-%m-%dT%H:%MZ)"
python3 - "$ROWS" <<'EOF' | tee "$OUT/table.md"
import sys
rows = [l.rstrip('\n').split('\t') for l in open(sys.argv[1]) if l.strip()]
def ratio(a, b, name):
    try:
        a, b = float(a), float(b)
    except ValueError:
        return '-'
    if not a or not b:
        return '-'
    lower_better = '(s/' in name or '(ms/' in name
    return f'{(b / a if lower_better else a / b):.3g}x'
print('| row | paragon | peer, same run | paragon/peer (speed) | bits = host | note |')
print('|---|---|---|---|---|---|')
for r in rows:
    name, ours, peer, bits, note = (r + [''] * 5)[:5]
    print(f'| {name} | {ours} | {peer} | {ratio(ours, peer, name)} | {bits} | {note} |')
bad = [r[0] for r in rows if r[3] == 'no']
unchecked = [r[0] for r in rows if r[3] == '?']
print(f'gpu-check: {len(rows)} rows, {len(bad)} not equal to the host' + (': ' + ', '.join(bad) if bad else '') +
      (f'; {len(unchecked)} not checked (no host result): ' + ', '.join(unchecked) if unchecked else ''))
EOF
