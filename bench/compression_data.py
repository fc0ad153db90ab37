#!/usr/bin/env python3
"""bench/compression's data half, run in build/venv-compression: writes the tensors as raw
files and measures ZipNN on exactly those bytes.

    compression_data.py OUT_DIR MODEL_SAFETENSORS

Writes OUT_DIR/NAME.DTYPE.bin for
  minilm   every float32 tensor of the all-MiniLM-L6-v2 safetensors file, flattened and
           concatenated in name order: as shipped, and cast to bfloat16 and float16 (round to
           nearest even, as torch casts);
  resnet18 the gradients of torchvision's resnet18 (weights=None, seed 0) after 3 steps of
           SGD on random images and labels, concatenated in parameter order: float32, and
           cast to bfloat16;
  random   32 MiB of uniformly random bits (seed 0), read as bfloat16 and as float32;
and OUT_DIR/tensors.json: [{name, dtype, file, bytes, zipnn_ratio}, ...]. ZipNN runs on one
thread with its defaults (byte grouping, automatic coder choice).
"""

import json
import sys
from pathlib import Path

import numpy as np
import torch
import torchvision
from safetensors.numpy import load_file
from zipnn import ZipNN


def minilm(path):
    tensors = load_file(str(path))
    # The weights only: the file also holds an int64 buffer (position_ids).
    parts = [tensors[n].ravel() for n in sorted(tensors) if tensors[n].dtype == np.float32]
    return torch.from_numpy(np.concatenate(parts))


def resnet18_gradients(steps=3, batch=8):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torchvision.models.resnet18(weights=None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(steps):
        images = torch.randn(batch, 3, 224, 224)
        labels = torch.randint(0, 1000, (batch,))
        optimizer.zero_grad()
        loss_fn(model(images), labels).backward()
        optimizer.step()
    return torch.cat([p.grad.detach().ravel() for p in model.parameters()])


def raw_bytes(tensor):
    """The tensor's bytes in memory (bfloat16 through its 16-bit pattern)."""
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.view(torch.int16)
    return tensor.contiguous().numpy().tobytes()


def zipnn_ratio(data, dtype):
    coded = ZipNN(input_format="byte", bytearray_dtype=dtype, threads=1).compress(data)
    return len(data) / len(coded)


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    weights = minilm(sys.argv[2])
    grads = resnet18_gradients()
    noise = torch.from_numpy(np.random.default_rng(0).integers(0, 256, 32 << 20, dtype=np.uint8))
    cases = [
        ("minilm", "float32", weights),
        ("minilm", "bfloat16", weights.to(torch.bfloat16)),
        ("minilm", "float16", weights.to(torch.float16)),
        ("resnet18-grad", "float32", grads),
        ("resnet18-grad", "bfloat16", grads.to(torch.bfloat16)),
        ("random", "bfloat16", noise.view(torch.int16)),
        ("random", "float32", noise.view(torch.float32)),
    ]
    rows = []
    for name, dtype, tensor in cases:
        data = raw_bytes(tensor)
        file = out / f"{name}.{dtype}.bin"
        file.write_bytes(data)
        rows.append({"name": name, "dtype": dtype, "file": str(file), "bytes": len(data),
                     "zipnn_ratio": zipnn_ratio(data, dtype)})
        print(f"compression_data: {file.name} {len(data)} bytes, ZipNN {rows[-1]['zipnn_ratio']:.4f}",
              file=sys.stderr)
    (out / "tensors.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
