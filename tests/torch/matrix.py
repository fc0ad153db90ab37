"""Every backend method x dtype x op, against exact expected values and against gloo's
result in the same job. Inputs are small integers, so sums and products are exact in every
dtype (float16 and bfloat16 included) and the expected values can be computed locally."""
import torch
import torch.distributed as dist

R = dist.ReduceOp
REDUCING = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
            torch.uint8, torch.int32, torch.int64, torch.bool]
INTEGER = {torch.int8, torch.uint8, torch.int32, torch.int64}
MOVING = REDUCING + [torch.int16, torch.complex64]  # collectives that move bytes
COUNTS = [0, 1, 7, 1003]  # 7 and 1003: not divisible by 2, 3 or 4


def ops_for(dtype):
    if dtype == torch.bool:
        return [R.SUM, R.PRODUCT, R.MIN, R.MAX, R.BAND, R.BOR, R.BXOR]
    ops = [R.SUM, R.AVG, R.PRODUCT, R.MIN, R.MAX]
    if dtype in INTEGER:
        ops += [R.BAND, R.BOR, R.BXOR]
    return ops


def value(rank, count, dtype):
    """Rank `rank`'s input: small integers 1..3 (bool: a pattern of both values)."""
    base = (torch.arange(count, dtype=torch.int64) * 7 + rank * 3) % 3 + 1
    if dtype == torch.bool:
        return (base % 2 == 0)
    if dtype == torch.complex64:
        return torch.complex(base.float(), -base.float())
    return base.to(dtype)


def expected_reduce(inputs, op, dtype):
    """The reduction computed here, in int64/float64, then cast like the backend's."""
    n = len(inputs)
    wide = [x.to(torch.int64) for x in inputs]
    if op == R.SUM:
        out = sum(wide)
    elif op == R.PRODUCT:
        out = wide[0].clone()
        for x in wide[1:]:
            out = out * x
    elif op == R.MIN:
        out = torch.stack(wide).min(0).values
    elif op == R.MAX:
        out = torch.stack(wide).max(0).values
    elif op == R.BAND:
        out = wide[0].clone()
        for x in wide[1:]:
            out = out & x
    elif op == R.BOR:
        out = wide[0].clone()
        for x in wide[1:]:
            out = out | x
    elif op == R.BXOR:
        out = wide[0].clone()
        for x in wide[1:]:
            out = out ^ x
    elif op == R.AVG:
        total = sum(wide)
        if dtype.is_floating_point:
            return (total.to(torch.float64) / n).to(dtype)
        return torch.div(total, n, rounding_mode="trunc").to(dtype)
    if dtype == torch.bool:
        return out != 0 if op != R.SUM else out != 0
    return out.to(dtype)


def same(a, b, dtype, op=None):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if op == R.AVG and dtype in (torch.float16, torch.bfloat16):
        return torch.allclose(a.float(), b.float(), rtol=1e-2)
    return torch.equal(a, b)


class Checker:
    def __init__(self, rank, n, gloo):
        self.rank, self.n, self.gloo = rank, n, gloo
        self.failures = []
        self.checked = 0
        self.compared = 0  # checks against gloo's result

    def expect(self, what, got, want, dtype, op=None):
        self.checked += 1
        if not same(got, want, dtype, op):
            self.failures.append("%s: got %s expected %s" % (what, got.tolist()[:8],
                                                               want.tolist()[:8]))

    def against_gloo(self, what, run, dtype):
        """run(group) -> tensor: grove's result must equal gloo's (when gloo can run it)."""
        mine = run(None)
        try:
            theirs = run(self.gloo)
        except (RuntimeError, ValueError):
            return mine  # gloo cannot run it; the exact check still applies
        self.compared += 1
        self.expect(what + " vs gloo", mine, theirs, dtype)
        return mine


def check_reductions(c, dtype, count):
    rank, n = c.rank, c.n
    inputs = [value(q, count, dtype) for q in range(n)]
    for op in ops_for(dtype):
        want = expected_reduce(inputs, op, dtype)
        name = "all_reduce %s %s count %d" % (dtype, op, count)

        def allreduce(group, op=op):
            t = inputs[rank].clone()
            dist.all_reduce(t, op=op, group=group)
            return t
        c.expect(name, c.against_gloo(name, allreduce, dtype), want, dtype, op)
    for op in [R.SUM, R.MAX]:
        t = inputs[rank].clone()
        dist.reduce(t, dst=n - 1, op=op)
        if rank == n - 1:
            c.expect("reduce %s %s %d" % (dtype, op, count), t,
                     expected_reduce(inputs, op, dtype), dtype)
        # Reduce-scatter: rank q's input is n blocks; block r of the result goes to rank r.
        blocks = [torch.cat([value(q * n + b, count, dtype) for b in range(n)]) for q in range(n)]
        mine = [blocks[q][rank * count:(rank + 1) * count] for q in range(n)]
        want = expected_reduce(mine, op, dtype)
        out = torch.empty(count, dtype=dtype)
        dist.reduce_scatter_tensor(out, blocks[rank].clone(), op=op)
        c.expect("reduce_scatter_tensor %s %s %d" % (dtype, op, count), out, want, dtype)
        out2 = torch.empty(count, dtype=dtype)
        dist.reduce_scatter(out2, list(blocks[rank].clone().chunk(n)) if count else
                            [torch.empty(0, dtype=dtype) for _ in range(n)], op=op)
        c.expect("reduce_scatter %s %s %d" % (dtype, op, count), out2, want, dtype)
    if dtype.is_floating_point:
        # PREMUL_SUM: each input scaled by 2 first.
        t = inputs[rank].clone()
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
        c.expect("all_reduce premul_sum %s %d" % (dtype, count), t,
                 (expected_reduce(inputs, R.SUM, torch.float64) * 2).to(dtype), dtype)


def check_moves(c, dtype, count):
    rank, n = c.rank, c.n
    mine = value(rank, count, dtype)
    everyone = [value(q, count, dtype) for q in range(n)]
    t = mine.clone()
    dist.broadcast(t, src=1 % n)
    c.expect("broadcast %s %d" % (dtype, count), t, everyone[1 % n], dtype)
    outs = [torch.empty(count, dtype=dtype) for _ in range(n)]
    dist.all_gather(outs, mine)
    for q in range(n):
        c.expect("all_gather %s %d from %d" % (dtype, count, q), outs[q], everyone[q], dtype)
    flat = torch.empty(count * n, dtype=dtype)
    dist.all_gather_into_tensor(flat, mine)
    c.expect("all_gather_into_tensor %s %d" % (dtype, count), flat, torch.cat(everyone), dtype)
    gathered = [torch.empty(count, dtype=dtype) for _ in range(n)] if rank == 0 else None
    dist.gather(mine, gathered, dst=0)
    if rank == 0:
        for q in range(n):
            c.expect("gather %s %d from %d" % (dtype, count, q), gathered[q], everyone[q], dtype)
    pieces = [value(100 + q, count, dtype) for q in range(n)]
    out = torch.empty(count, dtype=dtype)
    dist.scatter(out, pieces if rank == n - 1 else None, src=n - 1)
    c.expect("scatter %s %d" % (dtype, count), out, pieces[rank], dtype)
    # all_to_all_single, equal blocks: block q of rank p's input goes to rank q.
    send = torch.cat([value(rank * n + q, count, dtype) for q in range(n)])
    recv = torch.empty(count * n, dtype=dtype)
    dist.all_to_all_single(recv, send)
    c.expect("all_to_all_single %s %d" % (dtype, count), recv,
             torch.cat([value(p * n + rank, count, dtype) for p in range(n)]), dtype)
    # Uneven splits: rank p sends (p + q) % 3 rows to rank q.
    in_splits = [(rank + q) % 3 for q in range(n)]
    out_splits = [(p + rank) % 3 for p in range(n)]
    send = torch.cat([value(rank * n + q, s, dtype) for q, s in enumerate(in_splits)])
    recv = torch.empty(sum(out_splits), dtype=dtype)
    dist.all_to_all_single(recv, send, out_splits, in_splits)
    c.expect("all_to_all_single uneven %s" % dtype, recv,
             torch.cat([value(p * n + rank, s, dtype) for p, s in enumerate(out_splits)]), dtype)
    outs = [torch.empty(count, dtype=dtype) for _ in range(n)]
    dist.all_to_all(outs, [value(rank * n + q, count, dtype) for q in range(n)])
    for p in range(n):
        c.expect("all_to_all %s %d from %d" % (dtype, count, p), outs[p],
                 value(p * n + rank, count, dtype), dtype)
    # A ring of send/recv in one batch.
    right, left = (rank + 1) % n, (rank - 1) % n
    got = torch.empty(count, dtype=dtype)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, right),
                                    dist.P2POp(dist.irecv, got, left)])
    for w in works:
        w.wait()
    c.expect("send/recv ring %s %d" % (dtype, count), got, everyone[left], dtype)


def check_layouts(c):
    rank, n = c.rank, c.n
    # Non-contiguous tensors are staged: the result lands in the caller's view.
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4) + rank
    view = base.t()
    dist.all_reduce(view)
    want = (torch.arange(12, dtype=torch.float32).reshape(3, 4) * n + sum(range(n))).t()
    c.expect("all_reduce transposed view", view, want, torch.float32)
    strided = torch.zeros(10)
    part = strided[::2]
    part.fill_(float(rank))
    dist.broadcast(part, src=n - 1)
    want = torch.zeros(10)
    want[::2] = float(n - 1)
    c.expect("broadcast strided slice", strided, want, torch.float32)
    # Asynchronous calls complete in order, through their futures.
    tensors = [torch.full((5,), float(rank + i)) for i in range(4)]
    futures = [dist.all_reduce(t, async_op=True).get_future() for t in tensors]
    torch.futures.wait_all(futures)
    for i, t in enumerate(tensors):
        c.expect("async all_reduce %d" % i, t, torch.full((5,), float(sum(range(n)) + n * i)),
                 torch.float32)
    dist.barrier()
    # Coalesced: several tensors, one call.
    tensors = [torch.full((3,), float(rank)), torch.full((5,), 2.0 * rank)]
    with dist._coalescing_manager(async_ops=False):
        for t in tensors:
            dist.all_reduce(t)
    c.expect("coalesced all_reduce 0", tensors[0], torch.full((3,), float(sum(range(n)))),
             torch.float32)
    c.expect("coalesced all_reduce 1", tensors[1], torch.full((5,), 2.0 * sum(range(n))),
             torch.float32)


def check_collectives(rank, n, gloo):
    c = Checker(rank, n, gloo)
    for dtype in REDUCING:
        for count in COUNTS:
            check_reductions(c, dtype, count)
    for dtype in MOVING:
        for count in COUNTS:
            check_moves(c, dtype, count)
    check_layouts(c)
    return c.failures, c.checked, c.compared
