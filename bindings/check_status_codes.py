"""Fails unless the bindings' copies of the status codes equal fgemma.h's enum fgemma_status:
check_status_codes.py FGEMMA_H FILE... (Java `static final int NAME = N;`, Python `NAME = N` or
`A, B = 1, 2` at the start of a line; NAME is the C name without FGEMMA_ERR_). Every copied name must exist in C with the
same number, and the Java class must copy every error code."""
import re
import sys


def c_codes(header):
    with open(header, encoding="utf-8") as f:
        text = f.read()
    enum = re.search(r"typedef enum(?:\s+fgemma_status)?\s*\{(.*?)\}\s*fgemma_status;", text, re.S)
    if not enum:
        sys.exit(f"{header}: no `typedef enum fgemma_status {{...}} fgemma_status;`")
    body = re.sub(r"/\*.*?\*/", "", enum.group(1), flags=re.S)
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"FGEMMA_ERR_(\w+)\s*=\s*(\d+)", body)}


def copied_codes(path, names):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".java"):
        return {m.group(1): int(m.group(2)) for m in re.finditer(r"static\s+final\s+int\s+(\w+)\s*=\s*(\d+)\s*;", text)}
    found = {}
    for m in re.finditer(r"^(\w+(?:\s*,\s*\w+)*)\s*=\s*(\d+(?:\s*,\s*\d+)*)\s*$", text, re.M):  # A = 1 or A, B = 1, 2
        for name, value in zip(re.split(r"\s*,\s*", m.group(1)), re.split(r"\s*,\s*", m.group(2))):
            if name in names:
                found[name] = int(value)
    return found


def main(header, *copies):
    codes = c_codes(header)
    if not codes:
        sys.exit(f"{header}: no FGEMMA_ERR_ codes found")
    failures = []
    for path in copies:
        copied = copied_codes(path, codes)
        if not copied:
            failures.append(f"{path}: no status codes found (the check reads `NAME = N`)")
        for name, value in copied.items():
            if name not in codes:
                failures.append(f"{path}: {name} = {value}, but fgemma.h has no FGEMMA_ERR_{name}")
            elif codes[name] != value:
                failures.append(f"{path}: {name} = {value}, but fgemma.h has FGEMMA_ERR_{name} = {codes[name]}")
        if path.endswith(".java"):
            failures += [f"{path}: FGEMMA_ERR_{n} = {v} is not copied" for n, v in codes.items() if n not in copied]
    for failure in failures:
        print(failure, file=sys.stderr)
    print(f"{len(codes)} status codes, {len(copies)} copies: {'FAILED' if failures else 'equal'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
