#!/usr/bin/env python3
"""The PyTorch reference for paragon's Fashion-MNIST MLP (examples/jobs/fashion-mlp.json:
784-256-256-10, ReLU, SGD lr 0.05 momentum 0.9, batch 128): seconds per epoch of the training
loop alone (median over the epochs), to compare with bench-train on the same CPU in the same
minute. Reads Debian's dataset-fashion-mnist; prints one JSON line. Run with Debian's
/usr/bin/python3 (python3-torch). OMP_WAIT_POLICY=passive and OPENBLAS_CORETYPE=SkylakeX are
set before torch loads unless --default-env: PyTorch's best settings on these machines."""
import argparse
import gzip
import json
import os
import statistics
import sys
import time

DATA = "/usr/share/datasets/fashion-mnist"


def idx(data_dir, name):
    with gzip.open(os.path.join(data_dir, name), "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return data[4 + 4 * dims:], shape


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--default-env", action="store_true")
    p.add_argument("--device", default="cpu", help="cpu, or cuda (FP32 with TF32 off)")
    p.add_argument("--data", default=DATA, help=f"the four Fashion-MNIST files [{DATA}]")
    a = p.parse_args()
    if not a.default_env:
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        os.environ.setdefault("OPENBLAS_CORETYPE", "SkylakeX")
    import torch
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    device = torch.device(a.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    images, shape = idx(a.data, "train-images-idx3-ubyte.gz")
    labels, _ = idx(a.data, "train-labels-idx1-ubyte.gz")
    x = torch.frombuffer(bytearray(images), dtype=torch.uint8).reshape(shape[0], -1).float() / 255.0
    y = torch.frombuffer(bytearray(labels), dtype=torch.uint8).long()
    x, y = x.to(device), y.to(device)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    epoch_s = []
    for _ in range(a.epochs):
        t0 = time.perf_counter()
        order = torch.randperm(x.shape[0], device=device)
        for i in range(0, x.shape[0], 128):
            idx_b = order[i:i + 128]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x[idx_b]), y[idx_b])
            loss.backward()
            opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        epoch_s.append(time.perf_counter() - t0)
    print(json.dumps({"seconds_per_epoch": statistics.median(epoch_s), "epochs": epoch_s,
                      "torch_version": torch.__version__, "threads": a.threads, "device": str(device)}))


if __name__ == "__main__":
    sys.exit(main())
