#!/usr/bin/env python3
"""Check a run's benchmark against the dump it is published against, with DuckDB, independently of sword.

Usage: scripts/check-benchmark.py RUN_DIR
(runs under ${SWORD_PYTHON:-<repo>/.venv/bin/python}; create it with scripts/setup-venv.sh)

RUN_DIR holds `sword.parquet` and the extract artifacts of the dump the benchmark is published against
(`triples.parquet`, `statements.parquet`, `properties.parquet`): a fresh run, or a run that carried an older
benchmark (`--carry-from`). Checks, each by a query written here and not by sword's code:

- originals: every ORG (s, P, o) is a final triple (`triples.parquet`);
- existence: no variant (SS, OS, PSS, POS) is stated in the dump: not in the existence index
  (`statements.parquet`, every rank; for OS/POS the same lookup says the subject has no such value of P yet),
  nor reversed when P is symmetric, nor as (o, P', s) for an inverse P' of P;
- definition: every PSS subject is a subject of P among the final triples, every POS object an object of P
  (the pools distort draws PSS/POS from). A carried benchmark must pass this against the newer dump too.

Prints one line per check with its count, the first failures, and exits 1 when any check fails. Big dumps are
fine: the benchmark is small and DuckDB streams the Parquet files.
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

import duckdb  # noqa: E402


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    run = argv[1]
    files = {n: os.path.join(run, n + ".parquet") for n in ("sword", "triples", "statements", "properties")}
    for name, path in files.items():
        if not os.path.isfile(path):
            print("missing: %s" % path, file=sys.stderr)
            return 2
    con = duckdb.connect()
    con.execute("PRAGMA threads=%d" % max(1, int(os.environ.get("THREADS", "2"))))
    con.execute(
        "CREATE TEMP TABLE bench AS SELECT statement_id, strategy, subject, property, object FROM read_parquet(?)",
        [files["sword"]],
    )
    # The inverse properties of each P: P1696 on either side, stored comma-separated in `inverse`.
    con.execute(
        """CREATE TEMP TABLE inv AS
           WITH pairs AS (
             SELECT id AS p, trim(unnest(string_split(inverse, ','))) AS q FROM read_parquet(?)
             WHERE inverse IS NOT NULL AND inverse <> '')
           SELECT p, q FROM pairs WHERE q <> '' UNION SELECT q, p FROM pairs WHERE q <> ''""",
        [files["properties"]],
    )
    con.execute(
        'CREATE TEMP TABLE sym AS SELECT id AS p FROM read_parquet(?) WHERE "symmetric"', [files["properties"]]
    )
    variants = "SELECT * FROM bench WHERE strategy IN ('SS', 'OS', 'PSS', 'POS')"
    checks = [
        (
            "ORG not a final triple",
            """SELECT b.statement_id FROM bench b WHERE b.strategy = 'ORG' AND NOT EXISTS (
                 SELECT 1 FROM read_parquet($t) t
                 WHERE t.subject = b.subject AND t.property = b.property AND t.object = b.object)""",
        ),
        (
            "variant stated in the dump",
            """SELECT b.statement_id FROM (%s) b WHERE EXISTS (
                 SELECT 1 FROM read_parquet($s) s
                 WHERE s.subject = b.subject AND s.property = b.property AND s.object = b.object)"""
            % variants,
        ),
        (
            "variant stated reversed (symmetric P)",
            """SELECT b.statement_id FROM (%s) b JOIN sym ON sym.p = b.property WHERE EXISTS (
                 SELECT 1 FROM read_parquet($s) s
                 WHERE s.subject = b.object AND s.property = b.property AND s.object = b.subject)"""
            % variants,
        ),
        (
            "variant stated through an inverse of P",
            """SELECT b.statement_id FROM (%s) b JOIN inv ON inv.p = b.property WHERE EXISTS (
                 SELECT 1 FROM read_parquet($s) s
                 WHERE s.subject = b.object AND s.property = inv.q AND s.object = b.subject)"""
            % variants,
        ),
        (
            "PSS subject not a subject of P (definition)",
            """SELECT b.statement_id FROM bench b WHERE b.strategy = 'PSS' AND NOT EXISTS (
                 SELECT 1 FROM read_parquet($t) t WHERE t.subject = b.subject AND t.property = b.property)""",
        ),
        (
            "POS object not an object of P (definition)",
            """SELECT b.statement_id FROM bench b WHERE b.strategy = 'POS' AND NOT EXISTS (
                 SELECT 1 FROM read_parquet($t) t WHERE t.object = b.object AND t.property = b.property)""",
        ),
    ]
    counts = dict(con.execute("SELECT strategy, count(*) FROM bench GROUP BY 1 ORDER BY 1").fetchall())
    print("benchmark %s: %s" % (files["sword"], ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
    failed = 0
    for name, sql in checks:
        for key, name_ in (("$t", "triples"), ("$s", "statements")):
            sql = sql.replace(key, "'%s'" % files[name_].replace("'", "''"))
        rows = con.execute(sql).fetchall()
        mark = "ok  " if not rows else "FAIL"
        print("%s %-55s %d%s" % (mark, name, len(rows), (": " + ", ".join(r[0] for r in rows[:5])) if rows else ""))
        failed += bool(rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
