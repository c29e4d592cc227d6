"""Keeps the README's first screen true: check-readme-commands.py SOURCE_DIR CLI SHARED_DIR

1. The call between `<!-- readme-call` and `<!-- /readme-call -->` (a `$ ` command, `\\` continued,
   then its output) is run with CLI in SOURCE_DIR. When the model it names is absent (CI without the
   real model, a fresh clone), the same command runs on the mini fixture
   (SHARED_DIR/fixtures/models/mini-bf16, without --lora, tool_choice required): the flags and files
   must still work, and the output must have the shape shown (the same top-level keys, a call with a
   name and arguments). With the model
   present, the calls must call the functions shown with the argument names shown (values that
   differ, as the numerics' last bits may make them, are printed as a note).
2. Every relative link of README.md and docs/**/*.md names a file that exists.
Exit 0 when both hold; otherwise each failure is printed."""
import glob
import json
import os
import re
import shlex
import subprocess
import sys


def readme_call(readme):
    block = re.search(r"<!-- readme-call.*?```\n(.*?)```\n<!-- /readme-call -->", readme, re.S)
    if not block:
        raise SystemExit("README.md: no <!-- readme-call --> ... <!-- /readme-call --> block with a code block")
    lines = block.group(1).split("\n")
    if not lines[0].startswith("$ "):
        raise SystemExit(f"README.md: the readme-call block must open with `$ command`, not {lines[0]!r}")
    command, i = lines[0][2:], 0
    while command.endswith("\\"):
        i += 1
        command = command[:-1] + " " + lines[i].strip()
    return shlex.split(command), "\n".join(lines[i + 1:]).strip()


def check_call(source_dir, cli, shared_dir, failures):
    with open(os.path.join(source_dir, "README.md"), encoding="utf-8") as f:
        argv, shown_text = readme_call(f.read())
    if not argv[0].endswith("/fgemma"):
        failures.append(f"README.md: the readme-call runs {argv[0]}, not the fgemma CLI")
        return
    argv[0] = cli
    model_at = argv.index("--model") + 1
    argv[model_at] = os.path.expanduser(argv[model_at])
    real = os.path.exists(argv[model_at])
    if not real:
        argv[model_at] = os.path.join(shared_dir, "fixtures", "models", "mini-bf16")
        # An adapter trained for the real model does not fit the mini one, and the mini model's random
        # weights need the grammar's help to call at all.
        if "--lora" in argv:
            at = argv.index("--lora")
            del argv[at:at + 2]
        if "--tool-choice" in argv:
            argv[argv.index("--tool-choice") + 1] = "required"
        else:
            argv[2:2] = ["--tool-choice", "required"]  # after the subcommand
    print("running:", shlex.join(argv))
    run = subprocess.run(argv, cwd=source_dir, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        failures.append(f"the README's call failed (exit {run.returncode}): {run.stderr.strip()}")
        return
    try:
        shown, got = json.loads(shown_text), json.loads(run.stdout)
    except json.JSONDecodeError as e:
        failures.append(f"the README's call output or the CLI's is not JSON: {e}")
        return
    if set(shown) != set(got):
        failures.append(f"the README shows the keys {sorted(shown)}, the CLI prints {sorted(got)}")
    if not got.get("calls") or not all({"name", "arguments"} <= set(c) for c in got["calls"]):
        failures.append(f"the CLI printed no call with a name and arguments: {run.stdout.strip()}")
    if real:
        # The functions and argument names must be the ones shown; a value may move with the last bits
        # of the numerics (thread count, SIMD target, kernel changes), which is noted, not failed.
        def shape(calls):
            return [(c.get("name"), sorted(c.get("arguments", {}))) for c in calls or []]
        if shape(got.get("calls")) != shape(shown.get("calls")):
            failures.append(f"the README shows the calls {shown.get('calls')}, the model now writes {got.get('calls')}")
        elif got.get("calls") != shown.get("calls"):
            print(f"NOTE: argument values differ from the README's (refresh it): {json.dumps(got.get('calls'))}")
    print("model:", "the one the README names" if real else "absent: the mini fixture instead",
          "| calls:", json.dumps(got.get("calls")))


def check_links(source_dir, failures):
    pages = [os.path.join(source_dir, "README.md")] + glob.glob(os.path.join(source_dir, "docs", "**", "*.md"),
                                                                   recursive=True)
    for page in pages:
        with open(page, encoding="utf-8") as f:
            text = re.sub(r"```.*?```", "", f.read(), flags=re.S)  # code is not links
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            path = target.split("#")[0]
            if not path or re.match(r"[a-z]+:", path):
                continue
            if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(page), path))):
                failures.append(f"{os.path.relpath(page, source_dir)}: the link {target} names no file")
    print(f"links: {len(pages)} pages checked")


def main(source_dir, cli, shared_dir):
    failures = []
    check_call(source_dir, cli, shared_dir, failures)
    check_links(source_dir, failures)
    for failure in failures:
        print("FAILED:", failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
