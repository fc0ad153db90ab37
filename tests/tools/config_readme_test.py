#!/usr/bin/env python3
"""README.md's table of environment variables against the parameter table, through `grove config`.

Usage: config_readme_test.py GROVE_BINARY README_MD

Why through the command: `grove config --json` is the parameter table as users see it, so one
run checks both that the command lists every knob with its source and that the README's table
(the rows of its "Environment variables" section) names exactly the knobs the table declares.
Fails when a knob is missing from the README's table, when the README names a GROVE_ variable
the table lacks, or when `grove config` misreports a value's source or an invalid value.
"""
import json
import os
import re
import subprocess
import sys

NAME = re.compile(r"GROVE_[A-Z][A-Z0-9_]*")


def run_config(grove, extra_env):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROVE_")}
    env.update(extra_env)
    done = subprocess.run([grove, "config", "--json"], env=env, capture_output=True, text=True,
                          timeout=60)
    return done.returncode, json.loads(done.stdout)["knobs"]


def readme_names(path):
    text = open(path, encoding="utf-8").read()
    section = text.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    in_rows = set()
    for line in section.splitlines():
        if line.startswith("| `GROVE_"):
            in_rows.update(NAME.findall(line.split("|")[1]))
    return in_rows, set(NAME.findall(text))


def main():
    grove, readme = sys.argv[1], sys.argv[2]
    problems = []
    status, knobs = run_config(grove, {})
    table = {knob["name"] for knob in knobs}
    if status != 0:
        problems.append(f"grove config exited {status} with a clean environment")
    if any(knob["source"] != "default" for knob in knobs):
        problems.append("grove config shows a non-default source with a clean environment")
    rows, mentioned = readme_names(readme)
    for name in sorted(table - rows):
        problems.append(f"{name} is a knob but has no row in README.md's table")
    for name in sorted(mentioned - table):
        problems.append(f"README.md names {name}, which the parameter table lacks")

    status, knobs = run_config(grove, {"GROVE_FIFO_DEPTH": "8", "GROVE_SECRET": "hunter2"})
    by_name = {knob["name"]: knob for knob in knobs}
    if (by_name["GROVE_FIFO_DEPTH"]["value"], by_name["GROVE_FIFO_DEPTH"]["source"]) != (
            "8", "environment"):
        problems.append(f"GROVE_FIFO_DEPTH=8 shows as {by_name['GROVE_FIFO_DEPTH']}")
    if "hunter2" in json.dumps(knobs):
        problems.append("grove config printed the secret")

    status, knobs = run_config(grove, {"GROVE_FIFO_DEPTH": "1"})
    error = {knob["name"]: knob for knob in knobs}["GROVE_FIFO_DEPTH"].get("error", "")
    if status != 1 or "GROVE_FIFO_DEPTH='1'" not in error or "[2, 64]" not in error:
        problems.append(f"GROVE_FIFO_DEPTH=1: exit {status}, error '{error}'")

    for problem in problems:
        print("FAIL:", problem)
    if not problems:
        print(f"ok: {len(table)} knobs, README.md's table and grove config agree")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
