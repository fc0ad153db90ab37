"""grove as a torch.distributed backend.

    import grove_torch  # registers the backend "grove" for CPU tensors
    torch.distributed.init_process_group(backend="grove")

The group meets through the store torch gives every backend (no second server or port).
See docs/pytorch.md for what each torch call maps to.
"""
from datetime import timedelta

import torch
import torch.distributed as dist

from . import _C

BACKEND_NAME = "grove"


def _create_backend(dist_backend_opts, backend_options):
    timeout = dist_backend_opts.timeout
    timeout_ms = int(timeout.total_seconds() * 1000) if isinstance(timeout, timedelta) else 0
    return _C.GroveBackend(
        dist_backend_opts.store,
        dist_backend_opts.group_rank,
        dist_backend_opts.group_size,
        timeout_ms,
        str(dist_backend_opts.group_id),
    )


def _register():
    if BACKEND_NAME.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(BACKEND_NAME, _create_backend, extended_api=True,
                                  devices=["cpu"])


_register()

__all__ = ["BACKEND_NAME"]
