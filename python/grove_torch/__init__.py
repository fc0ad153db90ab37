"""grove as a torch.distributed backend.

    import grove_torch  # registers the backend "grove" for CPU tensors
    torch.distributed.init_process_group(backend="grove")

The group meets through the store torch gives every backend (no second server or port).
grove's knobs (the GROVE_* variables, `grove config` lists them) can be set per group from
code, winning over the environment:

    opts = grove_torch.Options(GROVE_ALGO="ring", GROVE_TIMEOUT=30)
    torch.distributed.init_process_group(backend="grove", pg_options=opts)
    torch.distributed.new_group(ranks, backend="grove", pg_options=opts)

See docs/pytorch.md for what each torch call maps to.
"""
from collections.abc import Mapping
from datetime import timedelta

import torch
import torch.distributed as dist

from . import _C

BACKEND_NAME = "grove"


class Options(dict):
    """grove's knobs for one process group, by variable name: Options(GROVE_ALGO="ring").

    Values are written as the environment would spell them (numbers and booleans are turned
    into "30", "1", "0"); grove checks each when the group is created and raises ValueError
    naming the knob, the value and what it expected.
    """

    def __init__(self, settings=None, **knobs):
        super().__init__()
        for name, value in {**dict(settings or {}), **knobs}.items():
            self[name] = value

    def __setitem__(self, name, value):
        if not isinstance(name, str):
            raise TypeError(f"grove_torch.Options: knob names are strings such as "
                            f"'GROVE_ALGO', got {name!r}")
        super().__setitem__(name, _spelled(name, value))


def _spelled(name, value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise TypeError(f"grove_torch.Options: {name} must be a string, number or bool, got "
                    f"{type(value).__name__}")


def _settings(backend_options):
    """The knobs given as pg_options: None, Options, or any mapping of name to value."""
    if backend_options is None:
        return {}
    if isinstance(backend_options, Mapping):
        return dict(Options(backend_options))
    raise TypeError("the grove backend takes pg_options=grove_torch.Options(...) (or a dict "
                    f"of GROVE_* knobs), got {type(backend_options).__name__}")


def _create_backend(dist_backend_opts, backend_options):
    timeout = dist_backend_opts.timeout
    timeout_ms = int(timeout.total_seconds() * 1000) if isinstance(timeout, timedelta) else 0
    return _C.GroveBackend(
        dist_backend_opts.store,
        dist_backend_opts.group_rank,
        dist_backend_opts.group_size,
        timeout_ms,
        str(dist_backend_opts.group_id),
        _settings(backend_options),
    )


def _register():
    if BACKEND_NAME.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(BACKEND_NAME, _create_backend, extended_api=True,
                                  devices=["cpu"])


_register()

__all__ = ["BACKEND_NAME", "Options"]
