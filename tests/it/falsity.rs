//! The falsity tier (docs/falsity.md) against two independent oracles: the generator's own record of the
//! world it wrote (`synth::Truth::falsity`) and `scripts/falsity-oracle`, a standard-library Python reading of
//! the raw dump. They share no code with each other or with the stages.

use crate::util::Workdir;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use sword::core::ids::{Pid, Qid};
use sword::synth::{self, Config, Tier};

/// `scripts/falsity-oracle DUMP --statements -` on `statements`: (tier, reasons) for each, in order.
pub fn python_tiers(dump: &Path, statements: &[(Qid, Pid, Qid)]) -> Vec<(String, String)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/falsity-oracle");
    let mut child = Command::new("python3")
        .arg(&script)
        .arg(dump)
        .args(["--statements", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs scripts/falsity-oracle (.ci/run installs python3)");
    let mut input = String::new();
    for (s, p, o) in statements {
        input.push_str(&format!("{s}\t{p}\t{o}\n"));
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "falsity-oracle failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<(String, String)> = text
        .lines()
        .zip(statements)
        .map(|(line, (s, p, o))| {
            let cols: Vec<&str> = line.split('\t').collect();
            assert_eq!(
                cols[..3],
                [s.to_string(), p.to_string(), o.to_string()],
                "{line}"
            );
            (cols[3].to_string(), cols[4].to_string())
        })
        .collect();
    assert_eq!(rows.len(), statements.len());
    rows
}

/// `scripts/falsity-oracle DUMP --summary -`.
pub fn python_summary(dump: &Path) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/falsity-oracle");
    let out = Command::new("python3")
        .arg(&script)
        .arg(dump)
        .args(["--summary", "-"])
        .output()
        .expect("python3 runs scripts/falsity-oracle");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Candidate statements of a generated world: for every final triple (s, p, o), the subject or the object
/// replaced by every `stride`-th graph entity (SS, OS) and by every `stride`-th subject or object of p (PSS,
/// POS). True and false ones alike: both oracles define the tier of any statement.
fn candidates(truth: &synth::Truth, stride: usize) -> Vec<(Qid, Pid, Qid)> {
    let mut graph = BTreeSet::new();
    let mut subjects: BTreeMap<Pid, BTreeSet<Qid>> = BTreeMap::new();
    let mut objects: BTreeMap<Pid, BTreeSet<Qid>> = BTreeMap::new();
    for &(s, p, o) in truth.triples.keys() {
        graph.extend([s, o]);
        subjects.entry(p).or_default().insert(s);
        objects.entry(p).or_default().insert(o);
    }
    let graph: Vec<Qid> = graph.into_iter().collect();
    let mut out = BTreeSet::new();
    for (i, &(s, p, o)) in truth.triples.keys().enumerate() {
        let every = |v: &[Qid]| -> Vec<Qid> {
            v.iter().copied().skip(i % stride).step_by(stride).collect()
        };
        for x in every(&graph) {
            out.insert((x, p, o));
            out.insert((s, p, x));
        }
        for x in every(&subjects[&p].iter().copied().collect::<Vec<_>>()) {
            out.insert((x, p, o));
        }
        for x in every(&objects[&p].iter().copied().collect::<Vec<_>>()) {
            out.insert((s, p, x));
        }
    }
    out.into_iter().collect()
}

fn tiers(truth: &synth::Truth, cands: &[(Qid, Pid, Qid)]) -> Vec<(Tier, Vec<&'static str>)> {
    let f = truth.falsity();
    cands.iter().map(|&(s, p, o)| f.tier(s, p, o)).collect()
}

/// The generator's tiers equal the Python reading of the dump on every candidate, over seeds, sizes and both
/// a plain and a gzip dump; its constraint and P279 counts equal the Python summary; and the worlds exercise
/// every tier and every reason for `certain`.
#[test]
fn the_generator_tiers_equal_an_independent_reading_of_the_dump() {
    let wd = Workdir::new();
    let mut seen_tiers: BTreeMap<&str, u64> = BTreeMap::new();
    let mut seen_reasons: BTreeMap<String, u64> = BTreeMap::new();
    for (seed, entities, name) in [
        (1u64, 4_000u64, "a.json"),
        (2, 6_000, "b.json.gz"),
        (42, 3_000, "c.json"),
    ] {
        let dump = wd.join(name);
        let cfg = Config {
            entities,
            seed,
            member_lines: 700,
            ..Config::default()
        };
        let truth = synth::write_file(&cfg, 2, &dump).unwrap();
        assert_eq!(
            python_summary(&dump),
            truth.falsity.summary(),
            "seed {seed}: the constraint and P279 counts"
        );
        let cands = candidates(&truth, 7);
        assert!(cands.len() > 5_000, "{} candidates", cands.len());
        let ours = tiers(&truth, &cands);
        let theirs = python_tiers(&dump, &cands);
        let mut differ = Vec::new();
        for ((c, (tier, why)), (t2, w2)) in cands.iter().zip(&ours).zip(&theirs) {
            let why = if why.is_empty() {
                "-".to_string()
            } else {
                why.join(",")
            };
            if tier.as_str() != t2 || &why != w2 {
                differ.push(format!(
                    "{} {} {}: generator {} ({why}), python {t2} ({w2})",
                    c.0,
                    c.1,
                    c.2,
                    tier.as_str()
                ));
            }
            *seen_tiers.entry(tier.as_str()).or_default() += 1;
            if why != "-" {
                for r in why.split(',') {
                    *seen_reasons.entry(r.to_string()).or_default() += 1;
                }
            }
        }
        assert!(
            differ.is_empty(),
            "seed {seed}: {} of {} candidates differ, e.g.\n{}",
            differ.len(),
            cands.len(),
            differ[..differ.len().min(20)].join("\n")
        );
    }
    eprintln!("tiers {seen_tiers:?}, reasons {seen_reasons:?}");
    for t in ["open", "likely", "certain"] {
        assert!(
            seen_tiers.get(t).copied().unwrap_or(0) > 50,
            "{seen_tiers:?}"
        );
    }
    for r in [
        "novalue",
        "single_value",
        "distinct_values",
        "subject_type",
        "value_type",
    ] {
        assert!(
            seen_reasons.get(r).copied().unwrap_or(0) > 10,
            "{r}: {seen_reasons:?}"
        );
    }
}

/// Every part of the generated constraints matters for some candidate: without exceptions, without
/// separators, with the classes' P279 statements cut below the first level, and without the `somevalue`
/// statements, some tiers change — so the equality above covers each of them.
#[test]
fn exceptions_separators_deep_closure_and_somevalue_each_decide_some_tier() {
    let wd = Workdir::new();
    let dump = wd.join("d.json");
    let cfg = Config {
        entities: 6_000,
        seed: 5,
        member_lines: 1000,
        ..Config::default()
    };
    let truth = synth::write_file(&cfg, 2, &dump).unwrap();
    let cands = candidates(&truth, 3);
    let base = tiers(&truth, &cands);
    let changed = |t: &synth::Truth| -> usize {
        tiers(t, &cands)
            .iter()
            .zip(&base)
            .filter(|(a, b)| a.0 != b.0)
            .count()
    };
    let mut no_exceptions = truth.clone();
    for c in no_exceptions.falsity.constraints.values_mut().flatten() {
        c.exceptions.clear();
    }
    let mut no_separators = truth.clone();
    for c in no_separators.falsity.constraints.values_mut().flatten() {
        c.separators.clear();
    }
    // P279 statements whose subject is itself a P279 value: what a closure deeper than one step follows.
    let values: BTreeSet<Qid> = truth
        .falsity
        .live
        .iter()
        .filter(|t| t.1 == Pid(279))
        .map(|t| t.2)
        .collect();
    let mut shallow = truth.clone();
    shallow
        .falsity
        .live
        .retain(|t| !(t.1 == Pid(279) && values.contains(&t.0)));
    let mut no_somevalue = truth.clone();
    no_somevalue.falsity.somevalue.clear();
    for (what, t) in [
        ("exceptions", &no_exceptions),
        ("separators", &no_separators),
        ("the closure beyond one step", &shallow),
        ("somevalue", &no_somevalue),
    ] {
        let n = changed(t);
        eprintln!("removing {what}: {n} of {} tiers change", cands.len());
        assert!(n > 0, "removing {what} changes no tier");
    }
}

/// The expected tiers of `data/falsity/hand.json` (derived by hand: data/falsity/README.md):
/// (s, p, o, tier, reasons).
pub fn hand_expected() -> Vec<(String, String, String, String, String)> {
    let text =
        std::fs::read_to_string(crate::util::data("falsity/hand.expected-tiers.tsv")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            assert_eq!(c.len(), 5, "{l}");
            (
                c[0].into(),
                c[1].into(),
                c[2].into(),
                c[3].into(),
                c[4].into(),
            )
        })
        .collect()
}

fn q(s: &str) -> Qid {
    Qid::parse(s).unwrap()
}

fn p(s: &str) -> Pid {
    Pid::parse(s).unwrap()
}

/// The summary of `data/falsity/hand.json`, counted by hand (data/falsity/README.md).
fn hand_summary() -> serde_json::Value {
    serde_json::json!({
        "constraints": 8,
        "constraints_by_kind": {"single_value": 3, "distinct_values": 1, "subject_type": 2, "value_type": 2},
        "constraints_other_kind": 1,
        "constraints_deprecated": 1,
        "constraints_with_separator": 1,
        "constraints_with_exceptions": 2,
        "bad_constraint_without_type": 1,
        "bad_constraint_without_classes": 1,
        "bad_constraint_unknown_relation": 1,
        "bad_qualifier_without_value": 2,
        "p279_cycles": 2,
    })
}

/// The Python oracle agrees with the tiers and counts derived by hand for the hand-made dump.
#[test]
fn the_oracle_reads_the_hand_made_dump_as_derived_by_hand() {
    let dump = crate::util::data("falsity/hand.json");
    let want = hand_expected();
    let stmts: Vec<_> = want
        .iter()
        .map(|(s, pp, o, ..)| (q(s), p(pp), q(o)))
        .collect();
    let got = python_tiers(&dump, &stmts);
    for (w, g) in want.iter().zip(&got) {
        assert_eq!((&w.3, &w.4), (&g.0, &g.1), "{} {} {}", w.0, w.1, w.2);
    }
    assert_eq!(python_summary(&dump), hand_summary());
}

/// A dump made of the newest version of every item and property among the real entity files
/// (`$SWORD_REAL_FIXTURES/entities`, API or bare entity JSON; newest by `modified`, then by file name), one per
/// line in id order. Their properties carry real P2302 statements (P8098's subject type with classes and
/// relation, P3111's and P279's), which the 2015 dump predates.
pub fn real_entity_dump(out: &Path) -> Option<()> {
    let dir = crate::util::real_fixture("entities")?;
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut best: BTreeMap<String, (String, serde_json::Value)> = BTreeMap::new();
    for f in files {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
        let ents: Vec<serde_json::Value> = match v.get("entities").and_then(|e| e.as_object()) {
            Some(m) => m.values().cloned().collect(),
            None => vec![v],
        };
        for e in ents {
            if !matches!(e["type"].as_str(), Some("item" | "property")) {
                continue;
            }
            let id = e["id"].as_str().unwrap().to_string();
            let modified = e["modified"].as_str().unwrap_or("").to_string();
            if best.get(&id).is_none_or(|b| modified > b.0) {
                best.insert(id, (modified, e));
            }
        }
    }
    let mut ids: Vec<&String> = best.keys().collect();
    ids.sort_by_key(|id| (id.chars().next(), id[1..].parse::<u64>().unwrap()));
    let lines: Vec<String> = ids
        .iter()
        .map(|id| serde_json::to_string(&best[*id].1).unwrap())
        .collect();
    std::fs::write(out, format!("[\n{}\n]\n", lines.join(",\n"))).unwrap();
    Some(())
}

/// The Python oracle on real lines, checked against the lines themselves (quoted below from
/// `dumps/jsondumpdata_20151109_1000-entities.json.gz` and the entity files).
#[test]
fn the_oracle_reads_real_lines_as_they_are_written() {
    let Some(gz) = crate::util::real_fixture("dumps/jsondumpdata_20151109_1000-entities.json.gz")
    else {
        return;
    };
    // Q233 (Malta): "P47":[{"mainsnak":{"snaktype":"novalue","property":"P47",...},"rank":"normal"}] — an
    // island borders nothing. Q51 (Antarctica): P17 `novalue`. Q937 (Einstein): P27 has six values and a
    // `novalue` (stateless years). Q1526 (Ramesses I): P20 only `somevalue`. Q31 (Belgium): P47 has values. No property of 2015 has a P2302
    // statement (constraints were templates on talk pages then), so nothing else decides.
    let stmts = [
        (q("Q233"), p("P47"), q("Q142")),
        (q("Q51"), p("P17"), q("Q142")),
        (q("Q937"), p("P27"), q("Q142")),
        (q("Q1526"), p("P20"), q("Q90")),
        (q("Q1526"), p("P19"), q("Q90")),
        (q("Q31"), p("P47"), q("Q233")),
    ];
    let got = python_tiers(&gz, &stmts);
    let want = [
        ("certain", "novalue"),
        ("certain", "novalue"),
        ("certain", "novalue"),
        ("likely", "-"),
        ("open", "-"),
        ("likely", "-"),
    ];
    for ((g, w), s) in got.iter().zip(want).zip(&stmts) {
        assert_eq!((g.0.as_str(), g.1.as_str()), w, "{s:?}");
    }
    let summary = python_summary(&gz);
    assert_eq!(summary["constraints"], 0);
    assert_eq!(summary["constraints_other_kind"], 0);
    assert_eq!(summary["p279_cycles"], 0);

    let wd = Workdir::new();
    let dump = wd.join("entities.json");
    real_entity_dump(&dump).unwrap();
    // P8098 (2020): format, distinct values, single value, subject type (P2308 Q5, P2309 Q21503252), item
    // requires statement. P3111 (2025): single value and distinct values beside six of other types. P279
    // (2018): four of other types (conflicts with ×2, property scope, value requires statement).
    let summary = python_summary(&dump);
    assert_eq!(
        summary,
        serde_json::json!({
            "constraints": 5,
            "constraints_by_kind": {"single_value": 2, "distinct_values": 2, "subject_type": 1, "value_type": 0},
            "constraints_other_kind": 12,
            "constraints_deprecated": 0,
            "constraints_with_separator": 0,
            "constraints_with_exceptions": 0,
            "bad_constraint_without_type": 0,
            "bad_constraint_without_classes": 0,
            "bad_constraint_unknown_relation": 0,
            "bad_qualifier_without_value": 0,
            "p279_cycles": 0,
        })
    );
    // Q182397 (2025): P102 holds two values and a live `novalue` statement.
    let got = python_tiers(&dump, &[(q("Q182397"), p("P102"), q("Q42"))]);
    assert_eq!(got[0], ("certain".to_string(), "novalue".to_string()));
}

/// The constraint reader the extract stage uses (`falsity::read_property_line`), summed over the property
/// lines of a dump, counts what the Python oracle counts.
fn reader_summary(dump: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dump).unwrap();
    let mut sum = sword::core::falsity::Summary::new();
    for line in text.lines() {
        if line.contains(r#""type":"property""#) {
            let (_, s) = sword::stages::extract::constraints::read_property_line(line.as_bytes())
                .unwrap()
                .unwrap();
            sum.add(&s);
        }
    }
    serde_json::to_value(sum).unwrap()
}

#[test]
fn the_constraint_reader_counts_what_the_oracle_counts() {
    let wd = Workdir::new();
    let mut dumps = vec![crate::util::data("falsity/hand.json")];
    for seed in [3u64, 42] {
        let d = wd.join(&format!("s{seed}.json"));
        synth::write_file(
            &Config {
                entities: 5_000,
                seed,
                ..Config::default()
            },
            2,
            &d,
        )
        .unwrap();
        dumps.push(d);
    }
    let real = wd.join("entities.json");
    if real_entity_dump(&real).is_some() {
        dumps.push(real);
    }
    for d in dumps {
        let mut want = python_summary(&d);
        // The P279 cycles are the item lines' business, not the property lines'.
        want["p279_cycles"] = 0.into();
        assert_eq!(reader_summary(&d), want, "{}", d.display());
    }
}

/// The rule distort builds from the falsity tables extract wrote into `dir`.
fn extracted_rule(dir: &Path) -> sword::stages::distort::falsity::Rule {
    use sword::stages::distort::falsity::{load, Tables};
    use sword::store::layout;
    let p = |a: layout::Artifact| dir.join(a.file);
    let (c, v, t, d) = (
        p(layout::CONSTRAINTS),
        p(layout::VALUES),
        p(layout::TYPES),
        p(layout::DISTINCT),
    );
    let tables = Tables {
        constraints: &c,
        values: &v,
        types: &t,
        distinct: &d,
    };
    load(&tables).unwrap().0
}

/// The statements of the run in `dir` at any rank (`statements.parquet`, which holds every statement between
/// labelled items): the tier is defined for false statements only, as distort's guards let through.
fn stated(dir: &Path) -> BTreeSet<(Qid, Pid, Qid)> {
    sword::store::tables::read_triples_file(&dir.join(sword::store::layout::STATEMENTS.file))
        .unwrap()
        .into_iter()
        .map(|t| (t.subject, t.property, t.object))
        .collect()
}

/// `(tier, reasons)` as the oracles write them (`-` for no reason).
fn rule_tiers(
    rule: &sword::stages::distort::falsity::Rule,
    cands: &[(Qid, Pid, Qid)],
) -> Vec<(String, String)> {
    cands
        .iter()
        .map(|&(s, p, o)| {
            let (t, why) = rule.tier(s, p, o);
            let why = why.names();
            let why = if why.is_empty() {
                "-".to_string()
            } else {
                why.join(",")
            };
            (t.as_str().to_string(), why)
        })
        .collect()
}

fn assert_same_tiers(
    what: &str,
    cands: &[(Qid, Pid, Qid)],
    ours: &[(String, String)],
    theirs: &[(String, String)],
) {
    let differ: Vec<String> = cands
        .iter()
        .zip(ours.iter().zip(theirs))
        .filter(|(_, (a, b))| a != b)
        .map(|(c, (a, b))| format!("{} {} {}: sword {a:?}, oracle {b:?}", c.0, c.1, c.2))
        .collect();
    assert!(
        differ.is_empty(),
        "{what}: {} of {} false statements differ, e.g.\n{}",
        differ.len(),
        cands.len(),
        differ[..differ.len().min(20)].join("\n")
    );
}

/// What extract keeps for the tier, read by distort's rule, gives every false candidate of a generated world
/// the generator's own tier and reasons (plain and gzip, at -j 1 and 2, the tables byte-identical across -j).
#[test]
fn extract_tables_give_every_false_candidate_the_generators_tier() {
    let wd = Workdir::new();
    for (seed, entities, name) in [(1u64, 4_000u64, "a.json"), (2, 6_000, "b.json.gz")] {
        let dump = wd.join(name);
        let cfg = Config {
            entities,
            seed,
            member_lines: 700,
            ..Config::default()
        };
        let truth = synth::write_file(&cfg, 2, &dump).unwrap();
        let d = dump.to_str().unwrap();
        let (j1, j2) = (format!("{name}.j1"), format!("{name}.j2"));
        wd.run_ok(&["-j", "1", "extract", "--dump", d, "--out", &j1]);
        wd.run_ok(&["-j", "2", "extract", "--dump", d, "--out", &j2]);
        let (j1, j2) = (wd.join(&j1), wd.join(&j2));
        for a in [
            sword::store::layout::CONSTRAINTS,
            sword::store::layout::VALUES,
            sword::store::layout::TYPES,
            sword::store::layout::DISTINCT,
        ] {
            assert!(
                std::fs::read(j1.join(a.file)).unwrap() == std::fs::read(j2.join(a.file)).unwrap(),
                "{name}: {} differs between -j 1 and -j 2",
                a.file
            );
        }
        let stated = stated(&j1);
        let cands: Vec<_> = candidates(&truth, 7)
            .into_iter()
            .filter(|c| !stated.contains(c))
            .collect();
        assert!(cands.len() > 5_000, "{} candidates", cands.len());
        let want: Vec<(String, String)> = tiers(&truth, &cands)
            .into_iter()
            .map(|(t, why)| {
                let why = if why.is_empty() {
                    "-".to_string()
                } else {
                    why.join(",")
                };
                (t.as_str().to_string(), why)
            })
            .collect();
        let got = rule_tiers(&extracted_rule(&j1), &cands);
        assert_same_tiers(name, &cands, &got, &want);
        for t in ["open", "likely", "certain"] {
            assert!(got.iter().filter(|g| g.0 == t).count() > 50, "{name}: {t}");
        }
        // The constraint reader's counts in the manifest are the oracle's (less the P279 cycles, which
        // distort counts).
        let m = crate::util::manifest(&j1, "extract");
        let mut summary = truth.falsity.summary();
        let mut got = m["extra"]["falsity"]["summary"].clone();
        for x in [&mut summary, &mut got] {
            x.as_object_mut().unwrap().remove("p279_cycles");
        }
        assert_eq!(got, summary, "{name}");
    }
}

/// Distort's `falsity` column is the generator's tier of each distortion; `--min-falsity likely` and
/// `certain` emit nothing below, drawing again instead (counted per strategy); the default draws the same
/// statements as `certain` would not.
#[test]
fn distortions_carry_the_tier_and_min_falsity_keeps_only_that_tier_or_above() {
    use sword::stages::distort::read_distortions_file;
    let wd = Workdir::new();
    let dump = wd.join("d.json");
    let cfg = Config {
        entities: 6_000,
        seed: 3,
        member_lines: 1000,
        ..Config::default()
    };
    let truth = synth::write_file(&cfg, 2, &dump).unwrap();
    let f = truth.falsity();
    wd.run_ok(&["extract", "--dump", dump.to_str().unwrap(), "--out", "run"]);
    let run = wd.join("run");
    let mut by_min = BTreeMap::new();
    for min in ["open", "likely", "certain"] {
        wd.run_ok(&[
            "distort",
            "--out",
            "run",
            "--samples",
            "400",
            "--min-falsity",
            min,
            "--force",
        ]);
        let rows = read_distortions_file(&run.join("distortions.parquet")).unwrap();
        let mut n = BTreeMap::new();
        for d in &rows {
            if d.strategy == sword::stages::distort::Strategy::ORG {
                assert_eq!(d.falsity, None);
                continue;
            }
            let t = d.falsity.expect("every variant has a tier").as_str();
            let want = f.tier(d.subject, d.property, d.object).0.as_str();
            assert_eq!(t, want, "{min}: {} {} {}", d.subject, d.property, d.object);
            let rank = |t: &str| ["open", "likely", "certain"].iter().position(|x| *x == t);
            assert!(rank(t) >= rank(min), "{min}: a {t} row");
            *n.entry(t).or_insert(0u64) += 1;
        }
        let m = crate::util::manifest(&run, "distort");
        assert_eq!(m["extra"]["falsity"]["min_falsity"], min);
        let rejected: u64 = ["SS", "OS", "PSS", "POS"]
            .iter()
            .map(|s| crate::util::count(&m, &format!("falsity_rejected_{s}")))
            .sum();
        if min == "open" {
            assert_eq!(rejected, 0);
        } else {
            assert!(rejected > 0, "{min}: no draw was rejected for its tier");
        }
        by_min.insert(min, (n, rows));
    }
    // With the default every tier appears; `certain` keeps more certain rows than the default drew.
    let open = &by_min["open"].0;
    assert!(open.len() == 3, "{open:?}");
    assert!(by_min["certain"].0["certain"] > open["certain"]);
}

/// On the real 1000-entity dump of 2015 (`SWORD_REAL_FIXTURES`), and on the newest real entity files (whose
/// properties carry real constraints), the tier extract and distort's rule give every false candidate equals
/// `scripts/falsity-oracle`'s reading of the raw dump.
#[test]
fn extract_tables_give_the_oracles_tier_on_real_dumps() {
    let Some(gz) = crate::util::real_fixture("dumps/jsondumpdata_20151109_1000-entities.json.gz")
    else {
        return;
    };
    let wd = Workdir::new();
    let entities = wd.join("entities.json");
    real_entity_dump(&entities).unwrap();
    for (dump, out) in [(gz, "real2015"), (entities, "entities")] {
        wd.run_ok(&["extract", "--dump", dump.to_str().unwrap(), "--out", out]);
        let dir = wd.join(out);
        let triples =
            sword::store::tables::read_triples_file(&dir.join(sword::store::layout::TRIPLES.file))
                .unwrap();
        // Every final triple's subject and object replaced by every entity of the run's triples.
        let mut ents = BTreeSet::new();
        for t in &triples {
            ents.extend([t.subject, t.object]);
        }
        let ents: Vec<Qid> = ents.into_iter().collect();
        let stated = stated(&dir);
        let mut cands = BTreeSet::new();
        for (i, t) in triples.iter().enumerate() {
            for &x in ents.iter().skip(i % 5).step_by(5) {
                cands.insert((x, t.property, t.object));
                cands.insert((t.subject, t.property, x));
            }
        }
        let cands: Vec<_> = cands.into_iter().filter(|c| !stated.contains(c)).collect();
        if out == "real2015" {
            assert!(cands.len() > 1_000, "{out}: {} candidates", cands.len());
        }
        let got = rule_tiers(&extracted_rule(&dir), &cands);
        let want = python_tiers(&dump, &cands);
        assert_same_tiers(out, &cands, &got, &want);
        let n = |t: &str| got.iter().filter(|g| g.0 == t).count();
        eprintln!(
            "{out}: {} false candidates: open {}, likely {}, certain {}",
            cands.len(),
            n("open"),
            n("likely"),
            n("certain")
        );
        if out == "real2015" {
            assert!(n("certain") > 0 && n("likely") > 0, "{out}");
        }
    }
}

/// Two lines of one property in a dump (an entity edited while the dump was written). Extract drops a
/// property's distinct-value pairs as they are read once one of its lines does not keep them, so a labelled
/// property whose lines disagree — one without the distinct-values constraint, or without labels — has that
/// constraint left out of `constraints.parquet` (named in the manifest) and no pairs: the same tables
/// whichever line comes first, whatever the chunks, the threads or the shards, and the tiers the oracle gives
/// such a dump. An identical second line changes no table.
#[test]
fn two_lines_of_one_property_give_the_same_tables_in_any_order_chunking_or_sharding() {
    use sword::store::layout;
    let wd = Workdir::new();
    let hand = std::fs::read_to_string(crate::util::data("falsity/hand.json")).unwrap();
    let lines: Vec<&str> = hand.lines().collect();
    let entities: Vec<String> = lines[1..lines.len() - 1]
        .iter()
        .map(|l| l.trim_end_matches(',').to_string())
        .collect();
    let p36 = entities
        .iter()
        .find(|l| l.contains(r#""id":"P36""#))
        .unwrap()
        .clone();
    let edited = |key: &str| {
        let mut v: serde_json::Value = serde_json::from_str(&p36).unwrap();
        v[key] = serde_json::json!({});
        v.to_string()
    };
    let (bare, unlabelled) = (edited("claims"), edited("labels"));
    let write = |name: &str, first: Option<&str>, last: Option<&str>| {
        let all: Vec<&str> = first
            .into_iter()
            .chain(entities.iter().map(String::as_str))
            .chain(last)
            .collect();
        let path = wd.write(name, format!("[\n{}\n]\n", all.join(",\n")));
        path.to_string_lossy().into_owned()
    };
    let extract = |dump: &str, out: &str, extra: &[&str]| {
        let mut args = vec!["extract", "--dump", dump, "--out", out];
        args.extend_from_slice(extra);
        wd.run_ok(&args);
        wd.join(out)
    };
    let tables = [layout::CONSTRAINTS.file, layout::DISTINCT.file];
    let bytes = |dir: &Path, f: &str| std::fs::read(dir.join(f)).unwrap();

    let hand_path = crate::util::data("falsity/hand.json");
    let base = extract(hand_path.to_str().unwrap(), "base", &[]);
    let base_constraints =
        sword::store::tables::falsity::read_constraints(&base.join(layout::CONSTRAINTS.file))
            .unwrap();
    assert_eq!(
        base_constraints
            .iter()
            .filter(
                |c| c.property == p("P36") && c.kind == sword::core::falsity::Kind::DistinctValues
            )
            .count(),
        1
    );
    let distinct_rows = |dir: &Path| {
        sword::store::tables::falsity::for_each_distinct_value(
            &dir.join(layout::DISTINCT.file),
            |_| {},
        )
        .unwrap()
    };
    assert!(distinct_rows(&base) > 0);

    let m = crate::util::manifest(&base, "extract");
    for k in ["duplicate_item_lines", "duplicate_property_lines"] {
        assert_eq!(m["counts"][k], 0, "{k}");
    }

    // The same lines twice (P36's, and Q72's, which holds a P36 value): every table as with one, the
    // duplicates counted.
    let q72 = entities
        .iter()
        .find(|l| l.contains(r#""id":"Q72""#))
        .unwrap();
    let twice = extract(&write("twice.json", Some(&p36), Some(q72)), "twice", &[]);
    for f in crate::util::EXTRACT_ARTIFACTS {
        assert!(bytes(&base, f) == bytes(&twice, f), "{f} differs");
    }
    let m = crate::util::manifest(&twice, "extract");
    assert_eq!(crate::util::count(&m, "duplicate_entities"), 2);
    assert_eq!(crate::util::count(&m, "duplicate_item_lines"), 1);
    assert_eq!(crate::util::count(&m, "duplicate_property_lines"), 1);
    assert_eq!(
        crate::util::count(&m, "falsity_distinct_constraints_left_out"),
        0
    );

    // Lines that disagree, first or last, at one chunk per line or so (`chunk_kib = 1`), -j 1 and 2, and
    // in three shards of the plain file.
    let small = wd.write("small.toml", "chunk_kib = 1\n");
    let small = small.to_string_lossy().into_owned();
    let mut first = None;
    for (what, line) in [("bare", &bare), ("unlabelled", &unlabelled)] {
        for at_start in [true, false] {
            let (a, b) = if at_start {
                (Some(line.as_str()), None)
            } else {
                (None, Some(line.as_str()))
            };
            let name = format!("{what}-{at_start}");
            let dump = write(&format!("{name}.json"), a, b);
            let dirs = [
                extract(&dump, &format!("{name}.d"), &[]),
                extract(
                    &dump,
                    &format!("{name}.c1"),
                    &["-j", "1", "--config", &small],
                ),
                extract(
                    &dump,
                    &format!("{name}.c2"),
                    &["-j", "2", "--config", &small],
                ),
                {
                    let out = format!("{name}.sh");
                    for k in ["0/3", "1/3", "2/3"] {
                        extract(&dump, &out, &["--shard", k]);
                    }
                    extract(&dump, &out, &["--join-shards", "3"])
                },
            ];
            for d in &dirs {
                let m = crate::util::manifest(d, "extract");
                // (`duplicate_entities` counts the labelled lines: the unlabelled copy is not one.)
                let twice = u64::from(what == "bare");
                assert_eq!(
                    crate::util::count(&m, "duplicate_entities"),
                    twice,
                    "{name}"
                );
                assert_eq!(
                    crate::util::count(&m, "duplicate_property_lines"),
                    1,
                    "{name}"
                );
                assert_eq!(
                    crate::util::count(&m, "falsity_distinct_constraints_left_out"),
                    1,
                    "{name} {}",
                    d.display()
                );
                assert_eq!(m["extra"]["distinct_left_out"], serde_json::json!(["P36"]));
                let first = first.get_or_insert_with(|| d.clone());
                for f in tables {
                    assert!(
                        bytes(first, f) == bytes(d, f),
                        "{f}: {} differs from {}",
                        d.display(),
                        first.display()
                    );
                }
            }
            // The constraints are the hand dump's but P36's distinct values; no pairs.
            let got = sword::store::tables::falsity::read_constraints(
                &dirs[0].join(layout::CONSTRAINTS.file),
            )
            .unwrap();
            let want: Vec<_> = base_constraints
                .iter()
                .filter(|c| {
                    !(c.property == p("P36")
                        && c.kind == sword::core::falsity::Kind::DistinctValues)
                })
                .cloned()
                .collect();
            assert_eq!(got, want, "{name}");
            assert_eq!(distinct_rows(&dirs[0]), 0, "{name}");
            // Distort's rule on these tables gives the oracle's tiers (the oracle keeps a distinct-values
            // constraint only when every line of its property has it; it does not model labels), and the
            // statement the hand dump made certain by distinct values alone is only likely now.
            let cands: Vec<(Qid, Pid, Qid)> = hand_expected()
                .iter()
                .map(|(s, pp, o, ..)| (q(s), p(pp), q(o)))
                .collect();
            let ours = rule_tiers(&extracted_rule(&dirs[0]), &cands);
            let i = cands
                .iter()
                .position(|c| *c == (q("Q71"), p("P36"), q("Q20")))
                .unwrap();
            assert_eq!(ours[i], ("likely".to_string(), "-".to_string()), "{name}");
            if what == "bare" {
                let theirs = python_tiers(Path::new(&dump), &cands);
                assert_same_tiers(&name, &cands, &ours, &theirs);
            }
        }
    }
}
