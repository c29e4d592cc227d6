"""Fails unless a user guide holds each given example file verbatim (the examples are run by CTest, so
the guide's code is the code that is tested): check_readme_examples.py GUIDE.md FILE..."""
import sys


def main(readme_path, *examples):
    with open(readme_path, encoding="utf-8") as f:
        readme = f.read()
    missing = []
    for path in examples:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if text not in readme:
            missing.append(path)
    for path in missing:
        print(f"{readme_path} does not show {path} verbatim: copy the file into its code block", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
