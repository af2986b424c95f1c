#!/usr/bin/env python3
"""Writes the data section of a pgl program that trains on Fashion-MNIST
(examples/inet/train_fashion.pgl): the first TRAIN training and TEST test images of the Debian
package dataset-fashion-mnist, each a definition holding its 784 bytes (a row of 28 per line),
and train_set / test_set, balanced trees of Leaf(label, image) the program walks. Everything
after the marker line is replaced; what comes before it (the program) is kept as it is.

usage: scripts/fashion-pgl-data.py FILE.pgl [--train N] [--test N]"""
import argparse
import gzip
import struct

DATASET = "/usr/share/datasets/fashion-mnist"
MARKER = "// ---- data"


def read_idx(name, count):
    with gzip.open(f"{DATASET}/{name}", "rb") as f:
        magic = struct.unpack(">I", f.read(4))[0]
        dims = [struct.unpack(">I", f.read(4))[0] for _ in range(magic & 0xFF)]
        size = 1
        for d in dims[1:]:
            size *= d
        if count > dims[0]:
            raise SystemExit(f"{name} has {dims[0]} items, {count} asked for")
        data = f.read(count * size)
    return [data[i * size:(i + 1) * size] for i in range(count)]


def tree(leaves):
    if len(leaves) == 1:
        return leaves[0]
    half = (len(leaves) + 1) // 2
    return f"Node({tree(leaves[:half])}, {tree(leaves[half:])})"


def section(prefix, images, labels):
    lines = []
    for i, image in enumerate(images):
        rows = [", ".join(str(b) for b in image[r:r + 28]) for r in range(0, len(image), 28)]
        lines.append(f"{prefix}{i} = [" + ",\n  ".join(rows) + "]")
    leaves = [f"Leaf({labels[i][0]}, {prefix}{i})" for i in range(len(images))]
    return lines, tree(leaves)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--train", type=int, default=32)
    ap.add_argument("--test", type=int, default=32)
    a = ap.parse_args()
    with open(a.file, encoding="utf-8") as f:
        text = f.read()
    cut = text.find("\n" + MARKER)
    program = text if cut < 0 else text[:cut + 1]
    out = [f"{MARKER}: the first {a.train} training and {a.test} test images of {DATASET}, "
           f"bytes 0..255 (scripts/fashion-pgl-data.py wrote what follows) ----"]
    for name, prefix, count in (("train", "train_image", a.train), ("t10k", "test_image", a.test)):
        images = read_idx(f"{name}-images-idx3-ubyte.gz", count)
        labels = read_idx(f"{name}-labels-idx1-ubyte.gz", count)
        defs, shape = section(prefix, images, labels)
        out.append(f"{'train' if name == 'train' else 'test'}_set = {shape}")
        out.extend(defs)
    with open(a.file, "w", encoding="utf-8") as f:
        f.write(program + "\n".join(out) + "\n")


if __name__ == "__main__":
    main()
