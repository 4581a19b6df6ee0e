#!/usr/bin/env python3
"""Cross-check `sword eval compare` with DuckDB and polars: recompute accuracy, gaps, agreement, Jaccard
(languages and models), the unparsed share, the wrong sets (`wrong_languages`) and `split` and, with a
benchmark, accuracy and swap effects by falsity tier from the samples with SQL, and compare every value with
figures.parquet; check that figures.csv holds the same rows as figures.parquet, that answers.parquet holds
every answer with its verdict, and that suspects.parquet holds exactly the pairs of the suspect rule.

  scripts/check-compare.py SAMPLES_DIR OUT_DIR [SWORD_PARQUET]    # OUT_DIR: compare's, --benchmark SWORD_PARQUET

SAMPLES_DIR is searched for samples.jsonl (as `--results` does); answers are read with a deliberately simple
rule that fits scripts/gen-compare-samples.py's answers ("True…" / "False…", anything else unparsed), not the
crate's parser of eight languages: use it on generated answers. Without arguments it generates 5 models × 150
originals, a benchmark giving each distortion a random falsity tier (a sword.parquet of the three columns
`--benchmark` reads, written with pyarrow) and runs SWORD (default target/debug/sword) itself. Exits 1 on any
difference above 1e-12.
"""
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
PY = os.environ.get("SWORD_PYTHON") or str(ROOT / ".venv" / "bin" / "python")
# Re-run under the repo's virtualenv (scripts/setup-venv.sh) when it exists and is not this interpreter.
if (not os.environ.get("_SWORD_PYTHON_SET") and os.access(PY, os.X_OK)
        and os.path.realpath(sys.prefix) != os.path.realpath(os.path.dirname(os.path.dirname(PY)))):
    os.environ["_SWORD_PYTHON_SET"] = "1"
    os.execv(PY, [PY, os.path.abspath(__file__)] + sys.argv[1:])

import duckdb  # noqa: E402
import polars as pl  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402


LANGS = ["en", "fr", "de", "es", "it", "pt", "ko", "ja"]


def write_benchmark(samples, path, seed=3):
    """A sword.parquet with each answered statement's id and strategy and, for a distortion, a tier drawn at
    random (seeded)."""
    import json
    import random
    rnd = random.Random(seed)
    seen = {}
    for f in sorted(samples.rglob("samples.jsonl")):
        with open(f) as fh:
            for line in fh:
                meta = json.loads(line)["meta"]
                seen.setdefault(meta["statement_id"], meta["strategy"])
    ids = sorted(seen)
    tiers = [None if seen[i] == "ORG" else rnd.choice(["open", "likely", "certain"]) for i in ids]
    pq.write_table(pa.table({"statement_id": ids, "strategy": [seen[i] for i in ids],
                             "falsity": pa.array(tiers, pa.string())}), path, compression="zstd")


def main():
    bench = None
    if len(sys.argv) in (3, 4):
        samples, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
        bench = pathlib.Path(sys.argv[3]) if len(sys.argv) == 4 else None
    else:
        tmp = pathlib.Path(tempfile.mkdtemp())
        subprocess.run([sys.executable, str(ROOT / "scripts/gen-compare-samples.py"), "--out", str(tmp),
                        "--models", "5", "--originals", "150", "--seed", "5", "--bad-pairs", "10"], check=True)
        samples, out, bench = tmp / "eval", tmp / "out", tmp / "sword.parquet"
        write_benchmark(samples, bench)
        sword = os.environ.get("SWORD", str(ROOT / "target/debug/sword"))
        subprocess.run([sword, "-q", "eval", "compare", "--results", str(samples), "--out", str(out),
                        "--bootstrap", "50", "--benchmark", str(bench)], check=True)
    files = sorted(str(p) for p in samples.rglob("samples.jsonl"))
    con = duckdb.connect()
    con.execute(f"""
        create table a as
        select model, meta.statement_id as sid, meta.original_id as oid, meta.language as lang,
               meta.strategy as strat, meta.label as label,
               coalesce((answer like 'True%' and meta.label) or (answer like 'False%' and not meta.label), false) as ok,
               not coalesce(answer like 'True%' or answer like 'False%', false) as unparsed
        from read_json_auto({files!r}, format = 'newline_delimited')
    """)
    expected = {}
    for m, l, s, v, n in con.execute(
            "select model, lang, strat, avg(ok::int), count(*) from a group by all").fetchall():
        expected[("accuracy", m, None, l, None, s, None, None)] = (v, n)
    for m, s, v in con.execute("""
            select model, strat, max(acc) - min(acc) from
              (select model, strat, lang, avg(ok::int) acc from a group by all) group by all""").fetchall():
        expected[("gap", m, None, None, None, s, None, None)] = (v, None)
    for m, l, v, n in con.execute(
            "select model, lang, avg(unparsed::int), count(*) from a group by all").fetchall():
        expected[("unparsed", m, None, l, None, None, None, None)] = (v, n)
    con.execute("""create table k as select model, sid, any_value(strat) strat, sum(ok::int) k, count(*) nl
                   from a group by model, sid""")
    for m, s, kk, l, v, n in con.execute("""
            select a.model, a.strat, k.k, a.lang, avg(a.ok::int), count(*) from a join k using (model, sid)
            where k.nl = 8 group by all""").fetchall():
        expected[("accuracy_by_agreement", m, None, l, None, s, kk, None)] = (v, n)
    for m, l1, l2, s, v, n in con.execute("""
            select x.model, x.lang, y.lang, x.strat,
                   sum((x.ok and y.ok)::int) / nullif(sum((x.ok or y.ok)::int), 0), count(*)
            from a x join a y on x.model = y.model and x.sid = y.sid and x.lang < y.lang
            group by all""").fetchall():
        l1, l2 = sorted((l1, l2), key=LANGS.index)  # the table's pairs follow the paper's language order
        expected[("jaccard_languages", m, None, l1, l2, s, None, None)] = (v, n)
    for m1, m2, l, s, v, n in con.execute("""
            select x.model, y.model, x.lang, x.strat,
                   sum((x.ok and y.ok)::int) / nullif(sum((x.ok or y.ok)::int), 0), count(*)
            from a x join a y on x.sid = y.sid and x.lang = y.lang and x.model < y.model
            group by all""").fetchall():
        expected[("jaccard_models", m1, m2, l, None, s, None, None)] = (v, n)
    # Wrong sets: the languages answered wrongly, in SWORD's order, over statements asked in all 8.
    con.execute(f"""create table w as select model, sid, any_value(strat) strat,
                    coalesce(string_agg(lang, '+' order by list_position({LANGS!r}, lang)) filter (where not ok), '') ws
                    from a group by model, sid having count(*) = 8""")
    for m, s, ws, v, n in con.execute("""
            select model, strat, ws, count(*) / sum(count(*)) over (partition by model, strat),
                   sum(count(*)) over (partition by model, strat) from w group by model, strat, ws""").fetchall():
        expected[("wrong_languages", m, None, ws, None, s, None, None)] = (v, n)
    every = "+".join(LANGS)
    for m, s, v, n in con.execute(f"""
            select model, strat, avg((ws <> '' and ws <> '{every}')::int), count(*) from w group by all""").fetchall():
        expected[("split", m, None, None, None, s, None, None)] = (v, n)
    suspects = set(con.execute("""
        with s as (select a.sid, a.lang, count(*) m, sum((not a.ok)::int) wrong
                   from a join w using (model, sid) group by a.sid, a.lang)
        select x.sid, x.lang, x.m, x.wrong from s x
        where x.m >= 3 and x.wrong >= (2 * x.m + 2) // 3
          and not exists (select 1 from s y where y.sid = x.sid and y.lang <> x.lang
                          and y.m - y.wrong < (2 * y.m + 2) // 3)""").fetchall())
    got_suspects = set(con.execute(f"""select statement_id, language, models, wrong
                                       from read_parquet('{out / "suspects.parquet"}')""").fetchall())
    answers_diff = con.execute(f"""
        select count(*) from a full join read_parquet('{out / "answers.parquet"}') p
          on a.model = p.model and a.sid = p.statement_id and a.lang = p.language
        where p.model is null or a.model is null or a.ok <> p.correct or a.oid <> p.original_id
           or (case when a.unparsed then null else (a.ok = a.label) end) is distinct from p.verdict
           or a.strat <> p.strategy or a.label <> p.label""").fetchone()[0]
    if bench is not None:
        con.execute(f"""create table t as select a.*, b.falsity as tier from a
                        join read_parquet('{bench}') b on a.sid = b.statement_id where a.strat != 'ORG'""")
        for m, l, s, t, v, n in con.execute(
                "select model, lang, strat, tier, avg(ok::int), count(*) from t group by all").fetchall():
            expected[("accuracy_by_tier", m, None, l, None, s, None, t)] = (v, n)
        for m, s, t, v, n in con.execute(
                "select model, strat, tier, avg(ok::int), count(*) from t group by all").fetchall():
            expected[("accuracy_by_tier_pooled", m, None, None, None, s, None, t)] = (v, n)
        for name, hard, easy in [("effect_pss_ss_by_tier", "PSS", "SS"), ("effect_pos_os_by_tier", "POS", "OS")]:
            for m, t, v, n in con.execute(f"""
                    select model, tier, avg(ok::int) filter (where strat = '{hard}')
                                        - avg(ok::int) filter (where strat = '{easy}'), count(*)
                    from t where strat in ('{hard}', '{easy}') group by all""").fetchall():
                expected[(name, m, None, None, None, None, None, t)] = (v, n)
    table = pl.read_parquet(out / "figures.parquet")
    csv = pl.read_csv(out / "figures.csv", infer_schema_length=0)
    fails = []
    if csv.height != table.height:
        fails.append(f"figures.csv has {csv.height} rows, figures.parquet {table.height}")
    else:
        as_text = table.select([pl.col(c).cast(pl.Utf8) for c in table.columns])
        for c in ["measure", "model", "model_b", "language", "language_b", "strategy", "tier", "agreement", "n"]:
            if as_text[c].fill_null("").to_list() != csv[c].fill_null("").to_list():
                fails.append(f"figures.csv column {c} differs from figures.parquet")
        for c in ["value", "lo", "hi"]:
            p = table[c].to_list()
            q = [None if x in (None, "") else float(x) for x in csv[c].to_list()]
            if p != q:
                fails.append(f"figures.csv column {c} differs from figures.parquet")
    got = {}
    for r in table.iter_rows(named=True):
        key = (r["measure"], r["model"], r["model_b"], r["language"], r["language_b"], r["strategy"], r["agreement"],
               r["tier"])
        got[key] = (r["value"], r["n"])
    if suspects != got_suspects:
        fails.append(f"suspects.parquet: {len(got_suspects)} pairs, the rule {len(suspects)}; "
                     f"missing {sorted(suspects - got_suspects)[:3]}, extra {sorted(got_suspects - suspects)[:3]}")
    if answers_diff:
        fails.append(f"answers.parquet: {answers_diff} answers differ from the samples (or are missing)")
    checked = 0
    for key, (v, n) in expected.items():
        if key not in got:
            fails.append(f"no row {key}")
            continue
        gv, gn = got[key]
        if (v is None) != (gv is None) or (v is not None and abs(v - gv) > 1e-12) or (n is not None and n != gn):
            fails.append(f"{key}: duckdb {v} (n {n}), figures.parquet {gv} (n {gn})")
        checked += 1
    print(f"check-compare: {checked} values recomputed with DuckDB, {table.height} rows of figures.parquet "
          f"against figures.csv, {len(suspects)} suspects by the rule, answers.parquet against the samples")
    if fails:
        print("check-compare: FAILED\n  " + "\n  ".join(fails[:20]), file=sys.stderr)
        sys.exit(1)
    print("check-compare: ok")


if __name__ == "__main__":
    main()
