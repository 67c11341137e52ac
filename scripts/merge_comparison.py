"""Replaces the rows of some policies in a comparison folder (`coda compare --out`) by a partial
run's: comparison.csv by the `policy` column, comparison.md by its `| policy |` lines; the other
rows, their order and the folder's plots stay. Used by scripts/bench_load.sh (POLICIES=...)."""

import csv
import sys
from pathlib import Path


def main(folder: Path, part: Path) -> None:
    with open(part / "comparison.csv", newline="") as f:
        new = list(csv.DictReader(f))
    by_policy = {r["policy"]: r for r in new}
    with open(folder / "comparison.csv", newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames
        rows = [by_policy.pop(r["policy"], r) for r in reader]
    rows.extend(by_policy.values())
    with open(folder / "comparison.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    rerun = {r["policy"] for r in new}

    def key(line: str):
        """The policy a Markdown line is about: a table row, or a "`policy`: ..." note."""
        if line.startswith("| "):
            return ("row", line.split("|")[1].strip())
        if line.startswith("`") and "`:" in line:
            return ("note", line[1:line.index("`:")])
        return None

    new_md = {key(line): line for line in (part / "comparison.md").read_text().splitlines()
              if key(line) and key(line)[1] in rerun}
    md = []
    for line in (folder / "comparison.md").read_text().splitlines():
        k = key(line)
        md.append(new_md.pop(k, line) if k and k[1] in rerun else line)
    md.extend(line for line in new_md.values() if line.startswith("`"))
    (folder / "comparison.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
