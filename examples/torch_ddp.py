"""DDP training on grove: the model of any torch tutorial, with backend="grove".

    make torch
    PYTHONPATH=python build/venv/bin/torchrun --standalone --nproc-per-node 4 examples/torch_ddp.py

Each rank trains on its own synthetic batches; at the end every rank prints the same loss
and the same parameter checksum (DDP keeps the replicas identical)."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import grove_torch  # noqa: F401  registers the backend "grove"


def main():
    dist.init_process_group(backend="grove")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(rank)
    for step in range(50):
        x = torch.randn(32, 64, generator=data)
        y = torch.randint(0, 10, (32,), generator=data)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    loss = loss.detach()
    dist.all_reduce(loss, op=dist.ReduceOp.AVG)
    checksum = sum(p.double().sum().item() for p in model.parameters())
    print(f"rank {rank}: mean loss {loss.item():.4f}, parameter checksum {checksum:.6f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
