#!/usr/bin/env python3
"""Prove that sword.parquet is readable as is by pyarrow, DuckDB and polars, with the documented schema.

Usage: scripts/check-parquet.py RUN_DIR/sword.parquet [data/golden/sword_schema.txt]
(runs under ${SWORD_PYTHON:-<repo>/.venv/bin/python}; create it with scripts/setup-venv.sh)

Checks, with each reader independently: the column names in order match the golden schema file; the row count
agrees; `strategy` is one of ORG/SS/OS/PSS/POS; `label` is true exactly for ORG; `subject`/`object` look like
Q-ids and `property` like a P-id; every variant has a replacement different from the original entity; and the
format version in the Parquet key-value metadata equals the golden file's. Exits non-zero on any failure.
"""
import os
import sys


def _use_repo_python():
    """Re-run this script under ${SWORD_PYTHON:-<repo>/.venv/bin/python} (scripts/setup-venv.sh) when it exists
    and is not already the running interpreter, so the script can be called directly from any shell."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    py = os.environ.get("SWORD_PYTHON") or os.path.join(repo, ".venv", "bin", "python")
    if os.environ.get("_SWORD_PYTHON_SET") or not os.access(py, os.X_OK):
        return
    if os.path.realpath(sys.prefix) == os.path.realpath(os.path.dirname(os.path.dirname(py))):
        return
    os.environ["_SWORD_PYTHON_SET"] = "1"
    os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])


_use_repo_python()

import re

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

STRATEGIES = {"ORG", "SS", "OS", "PSS", "POS"}


def golden(path):
    version, cols = None, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"# sword\.parquet format version (\d+)", line)
            if m:
                version = m.group(1)
            elif line.strip() and not line.startswith("#"):
                cols.append(line.split("\t")[0])
    return version, cols


def main():
    path = sys.argv[1]
    gpath = sys.argv[2] if len(sys.argv) > 2 else "data/golden/sword_schema.txt"
    version, cols = golden(gpath)
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    # pyarrow
    t = pq.read_table(path)
    md = {k.decode(): v.decode() for k, v in (t.schema.metadata or {}).items()}
    check(md.get("sword.format_version") == version, f"pyarrow: format version {md.get('sword.format_version')} != {version}")
    check(t.column_names == cols, "pyarrow: columns differ from the golden schema")
    n = t.num_rows
    strat = t.column("strategy").to_pylist()
    label = t.column("label").to_pylist()
    check(set(strat) <= STRATEGIES, f"pyarrow: unexpected strategies {set(strat) - STRATEGIES}")
    check(all(l == (s == "ORG") for s, l in zip(strat, label)), "pyarrow: label is not (strategy == ORG)")
    check(all(re.fullmatch(r"Q[1-9]\d*", x) for x in t.column("subject").to_pylist()), "pyarrow: bad subject id")
    check(all(re.fullmatch(r"P[1-9]\d*", x) for x in t.column("property").to_pylist()), "pyarrow: bad property id")
    check(all(re.fullmatch(r"Q[1-9]\d*", x) for x in t.column("object").to_pylist()), "pyarrow: bad object id")

    # DuckDB
    con = duckdb.connect()
    dcols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()]
    check(dcols == cols, "duckdb: columns differ from the golden schema")
    (dn,) = con.execute(f"SELECT count(*) FROM read_parquet('{path}')").fetchone()
    check(dn == n, f"duckdb: {dn} rows, pyarrow {n}")
    (bad,) = con.execute(
        f"""SELECT count(*) FROM read_parquet('{path}')
            WHERE label <> (strategy = 'ORG')
               OR (strategy <> 'ORG' AND (replacement_entity IS NULL OR replacement_entity = original_entity))
               OR (strategy IN ('SS','PSS') AND subject <> replacement_entity)
               OR (strategy IN ('OS','POS') AND object <> replacement_entity)"""
    ).fetchone()
    check(bad == 0, f"duckdb: {bad} rows break the label/replacement rules")
    by = dict(con.execute(f"SELECT strategy, count(*) FROM read_parquet('{path}') GROUP BY strategy").fetchall())

    # polars
    df = pl.read_parquet(path)
    check(df.columns == cols, "polars: columns differ from the golden schema")
    check(df.height == n, f"polars: {df.height} rows, pyarrow {n}")
    check(df.schema["label"] == pl.Boolean, f"polars: label is {df.schema['label']}")
    check(df.filter(pl.col("label") != (pl.col("strategy") == "ORG")).height == 0, "polars: label rule")

    if failures:
        for f in failures:
            print("FAIL", f)
        sys.exit(1)
    print(f"ok: {path}: {n} rows, {len(cols)} columns, format version {version}; per strategy {dict(sorted(by.items()))}; "
          f"pyarrow {pa.__version__}, duckdb {duckdb.__version__}, polars {pl.__version__}")


if __name__ == "__main__":
    main()
