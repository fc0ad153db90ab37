"""The grove torch.distributed backend, through torch's public API, in real processes.

Each test starts the ranks (launch.py) and checks what they report. Nothing here asserts a
time: failures are told apart by what their messages say (a heartbeat, the dead rank named);
the seconds they took are printed for the record."""
import os
import signal

import pytest

import launch


def run(case, ranks, *args, env=None, timeout=300):
    children = launch.run(case, ranks, args, env=env, timeout=timeout)
    return children


def ok(children):
    assert all(c.code == 0 for c in children), launch.describe(children)
    return children


def grove_segments():
    return {name for name in os.listdir("/dev/shm") if name.startswith("grove")}


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_every_method_dtype_and_op(ranks):
    for child in ok(run("collectives", ranks)):
        result = child.result("collectives")
        assert result["failed"] == 0, result["failures"]
        assert result["checked"] > 1000
        assert result["compared"] > 200  # the checks made against gloo's result
        print("rank %d: %d checks, %d against gloo" % (child.rank, result["checked"],
                                                        result["compared"]))


def test_new_group_subsets_used_alternately_and_object_collectives():
    children = ok(run("groups", 4))
    for child in children:
        r = child.result("groups")
        rank = child.rank
        want = []
        for step in range(3):
            want.append(10.0)  # 1 + 2 + 3 + 4 over the world
            if rank in (0, 3):
                want.append(1.0 + step + 4.0 + step)  # ranks 0 and 3, + step each
            if rank % 2 == 0:
                want.append(2.0)  # ranks 0 and 2
        assert r["sums"] == want
        assert r["objects"] == [{"rank": q, "text": "r%d" % q} for q in range(4)]
        assert r["broadcast"] == {"x": [1, 2, 3]}


def test_split_group_orders_members_by_the_list_and_leaves_others_out():
    results = {child.rank: child.result("split") for child in ok(run("split", 4))}
    assert results[0] == {"name": "split", "member": True, "backend": "grove", "rank": 1, "size": 2,
                          "sum": [4.0, 20.0], "broadcast": [2.0] * 3, "world": 10.0}
    assert results[2] == {"name": "split", "member": True, "backend": "grove", "rank": 0, "size": 2,
                          "sum": [4.0, 20.0], "broadcast": [2.0] * 3, "world": 10.0}
    assert results[1] == {"name": "split", "member": True, "backend": "grove", "rank": 0, "size": 1,
                          "sum": [2.0, 10.0], "broadcast": [1.0] * 3, "world": 10.0}
    assert results[3] == {"name": "split", "member": False, "world": 10.0}


def test_destroy_and_init_again_through_one_store_leaks_nothing():
    for child in ok(run("reinit", 2, 10)):
        r = child.result("reinit")
        assert r["last"] == 0 + 9 + 1 + 9  # ranks 0 and 1 in cycle 9
        # After cycle 10 no more than after cycle 1: nothing grows with the cycles.
        assert r["fds"][1] <= r["fds"][0], r
        assert r["threads"][1] <= r["threads"][0], r


@pytest.mark.parametrize("ranks", [2, 3])
def test_ddp_trains_identically_to_gloo(ranks):
    for child in ok(run("ddp", ranks)):
        r = child.result("ddp")
        assert r["identical"], "parameters differ across ranks"
        assert r["difference"] <= 1e-6, r
        assert r["moved"] > 1e-3, r  # training changed the parameters


def test_fsdp2_trains_identically_to_gloo():
    for child in ok(run("fsdp", 2)):
        r = child.result("fsdp")
        assert r["identical"], "parameters differ across ranks"
        assert r["difference"] <= 1e-6, r
        assert r["moved"] > 1e-3, r


def test_killed_rank_makes_every_survivor_raise_naming_it():
    before = grove_segments()
    children = run("kill", 3)
    assert children[2].code == -signal.SIGKILL, launch.describe(children)
    for child in children[:2]:
        assert child.code == 0, launch.describe(children)
        r = child.result("kill")
        assert r["cls"] == "DistBackendError", r
        assert "rank 2 failed" in r["error"], r
        print("rank %d raised %.3f s after the kill: %s" % (child.rank, r["seconds"], r["error"]))
    assert grove_segments() <= before, "segments left in /dev/shm: %s" % (grove_segments() - before)


def test_stopped_rank_is_found_by_heartbeats_not_the_group_timeout():
    # The group timeout is 120 s; the heartbeat (GROVE_HEARTBEAT_TIMEOUT, 10 s by default)
    # finds the stopped rank, and the message says so.
    children = launch.start("stop", 3)
    try:
        survivors = launch.finish(children[:2], timeout=200)
    finally:
        children[2].process.kill()
        launch.finish(children[2:], timeout=30)
    for child in survivors:
        assert child.code == 0, launch.describe(children)
        r = child.result("stop")
        assert r["cls"] == "DistBackendError", r
        assert "no heartbeat from rank 2" in r["error"] and "stopped or frozen" in r["error"], r
        print("rank %d raised %.1f s into its call: %s" % (child.rank, r["seconds"], r["error"]))


def test_rank_killed_during_init_is_named_by_its_pulse():
    # The group timeout is 120 s; torch's store cannot report rank 2's closed connection, so
    # rank 0 finds it by its init pulse standing still for GROVE_HEARTBEAT_TIMEOUT (5 s here).
    before = grove_segments()
    children = run("kill_during_init", 3, env={"GROVE_HEARTBEAT_TIMEOUT": "5"}, timeout=200)
    assert children[2].code == -signal.SIGKILL, launch.describe(children)
    for child in children[:2]:
        assert child.code == 0, launch.describe(children)
    r = children[0].result("kill_during_init")
    assert r["error"] is not None, r
    assert "rank 2 failed" in r["error"] and "no sign of life" in r["error"], r
    print("rank 0 raised %.1f s into new_group: %s: %s" % (r["seconds"], r["cls"], r["error"]))
    assert grove_segments() <= before, "segments left in /dev/shm: %s" % (grove_segments() - before)


def test_abort_ends_the_call_in_flight_not_at_the_group_timeout():
    # The group timeout is 120 s; ProcessGroup.abort() makes the all_reduce stuck on rank 1
    # fail at once with grove's reason (before, it ended only at that timeout, with a
    # timeout's message), and returns after it did.
    children = ok(run("abort", 2))
    r = children[0].result("abort")
    assert r["cls"] == "DistBackendError", r
    assert r["ended_before"] is False, r
    assert "on rank 0 of 2: the communicator was aborted" in r["error"], r
    print("abort() returned after %.4f s, the call raised after %.4f s: %s"
          % (r["abort_seconds"], r["seconds"], r["error"]))


def test_mismatched_calls_raise_on_every_rank_naming_both():
    children = ok(run("mismatch", 3))
    errors = [child.result("mismatch") for child in children]
    for r in errors:
        assert r["cls"] == "DistBackendError", r
        assert "calls differ between ranks" in r["error"], r
    # The first to see rank 0's broadcast names both calls; the others may hear of the
    # failure from it (its abort notice carries its message) before they see the broadcast.
    assert any("broadcast" in r["error"] and "allreduce" in r["error"] for r in errors), errors


def test_bad_dtype_op_and_arguments_raise_clearly_and_lose_nothing():
    for child in ok(run("bad_input", 2)):
        r = child.result("bad_input")
        m = r["messages"]
        rank = child.rank
        assert "rank %d" % rank in m["int16_sum"] and "Short" in m["int16_sum"] \
            and "SUM" in m["int16_sum"], m
        assert "MAX" in m["complex_max"], m  # torch itself refuses this one first
        assert "Float" in m["float_band"] and "BAND" in m["float_band"], m
        assert "root 5" in m["bad_root"] and "[0, 2)" in m["bad_root"], m
        assert "any source" in m["any_source"], m
        assert r["after"] == [2.0, 2.0, 2.0]


def test_options_set_from_code_reach_the_group_and_bad_ones_raise_naming_the_knob(tmp_path):
    children = ok(run("options", 2, str(tmp_path)))
    for child in children:
        r = child.result("options")
        refused = r["refused"]
        assert refused["bad_value"].startswith("ValueError") and \
            "GROVE_FIFO_DEPTH" in refused["bad_value"], refused
        assert refused["unknown"].startswith("ValueError") and \
            "GROVE_NO_SUCH_KNOB" in refused["unknown"], refused
        assert refused["not_a_mapping"].startswith("TypeError") and \
            "pg_options" in refused["not_a_mapping"], refused
        assert r["sum"] == [6.0] * 5  # 1 + 2 in the traced group, then 3 + 3 in the world
    assert sorted(os.listdir(tmp_path)) == ["group-0.json", "group-1.json"]
    for rank in range(2):
        trace = (tmp_path / ("group-%d.json" % rank)).read_text()
        assert '"cat":"call"' in trace and '"name":"allreduce #' in trace, trace[:400]


def test_monitored_barrier_names_the_rank_that_did_not_arrive():
    children = ok(run("monitored", 3, 1))
    assert children[1].result("monitored")["error"] is None
    for child in (children[0], children[2]):
        message = child.result("monitored")["error"]
        assert message is not None and "rank 1 of 3 did not arrive" in message, message


def test_readme_ddp_example_under_torchrun():
    # What README tells a newcomer to run, with 2 ranks: every rank prints the same checksum.
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.path.join(launch.REPO, "python"), OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         os.path.join(launch.REPO, "examples", "torch_ddp.py")],
        env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    # The ranks share torchrun's stdout, so their lines may interleave: match, do not split.
    import re
    found = re.findall(r"rank (\d): mean loss ([\d.]+), parameter checksum (-?[\d.]+)",
                       done.stdout)
    assert sorted(rank for rank, _, _ in found) == ["0", "1"], done.stdout
    assert len({(loss, checksum) for _, loss, checksum in found}) == 1, found
