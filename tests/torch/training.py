"""DDP and FSDP2 training on grove, checked against the same run on gloo in the same job.

The model, data and initial parameters are the same on every rank (seeded); each rank trains
on its own batches. Parameters must be byte-identical across ranks after training, and equal
to gloo's run within 1e-6 relative."""
import torch
import torch.distributed as dist
import torch.nn as nn
from datetime import timedelta


def model():
    torch.manual_seed(1234)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh(),
                         nn.Linear(64, 10))


def batches(rank, steps):
    g = torch.Generator().manual_seed(100 + rank)
    return [(torch.randn(16, 32, generator=g), torch.randint(0, 10, (16,), generator=g))
            for _ in range(steps)]


def flat_params(module):
    return torch.cat([p.detach().reshape(-1).clone() for p in module.parameters()])


def identical_across_ranks(flat, group):
    n = dist.get_world_size(group)
    everyone = [torch.empty_like(flat) for _ in range(n)]
    dist.all_gather(everyone, flat, group=group)
    return all(torch.equal(everyone[0], e) for e in everyone)


def run_steps(net, rank, steps):
    """SGD on this rank's batches: the same loop for every way of wrapping the model."""
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()
    for x, y in batches(rank, steps):
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()


def train_ddp(group, rank, steps):
    from torch.nn.parallel import DistributedDataParallel as DDP
    net = DDP(model(), process_group=group)
    run_steps(net, rank, steps)
    return flat_params(net.module)


def relative_difference(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def case_ddp(report):
    dist.init_process_group(backend="grove", timeout=timedelta(seconds=120))
    rank = dist.get_rank()
    gloo = dist.new_group(backend="gloo")
    mine = train_ddp(None, rank, 20)
    theirs = train_ddp(gloo, rank, 20)
    report("ddp", identical=identical_across_ranks(mine, None),
           difference=relative_difference(mine, theirs), moved=relative_difference(mine, flat_params(model())))
    dist.destroy_process_group()


def train_fsdp(mesh, rank, steps):
    from torch.distributed.fsdp import fully_shard
    net = model()
    for layer in net:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(net, mesh=mesh)
    run_steps(net, rank, steps)
    return torch.cat([p.full_tensor().detach().reshape(-1) for p in net.parameters()])


def case_fsdp(report):
    from torch.distributed.device_mesh import DeviceMesh
    dist.init_process_group(backend="grove", timeout=timedelta(seconds=120))
    rank, n = dist.get_rank(), dist.get_world_size()
    mine = train_fsdp(DeviceMesh("cpu", list(range(n))), rank, 10)
    gloo = dist.new_group(backend="gloo")
    theirs = train_fsdp(DeviceMesh.from_group(gloo, "cpu"), rank, 10)
    report("fsdp", identical=identical_across_ranks(mine, None),
           difference=relative_difference(mine, theirs), moved=relative_difference(mine, flat_params(model())))
    dist.destroy_process_group()
