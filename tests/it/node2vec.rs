//! Integration tests for `node2vec`.

/// `sword graph` and `sword walks` (helper "graphwalks").
mod graph_walks {
    use crate::util::Workdir;
    use proptest::prelude::*;
    use std::collections::{BTreeSet, HashMap, HashSet};
    use std::path::Path;
    use sword::stages::contract::{run, NoSettings};
    use sword::stages::embed::graph::{self, Csr, GraphArgs, GraphConfig, GraphStage};
    use sword::stages::embed::walks::{self, Bias, WalkConfig, Walks, WalksStage, PAD};
    use sword::store::Manifest;

    /// The edge set as the oracle sees it: unordered, no self-loops, no duplicates.
    fn oracle(edges: &[(u32, u32)]) -> HashSet<(u32, u32)> {
        edges
            .iter()
            .filter(|(a, b)| a != b)
            .map(|&(a, b)| (a.min(b), a.max(b)))
            .collect()
    }

    fn arb_graph() -> impl Strategy<Value = (usize, Vec<(u32, u32)>)> {
        (1usize..40).prop_flat_map(|n| {
            (
                Just(n),
                proptest::collection::vec((0..n as u32, 0..n as u32), 0..120),
            )
        })
    }

    fn arb_pq() -> impl Strategy<Value = (f64, f64)> {
        prop_oneof![
            Just((1.0, 1.0)),
            Just((0.5, 2.0)),
            Just((2.0, 0.5)),
            Just((0.1, 1.0)),
            Just((4.0, 0.25)),
            (0.05f64..5.0, 0.05f64..5.0),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn csr_round_trips_the_edge_set((n, edges) in arb_graph()) {
            let csr = Csr::from_edges(n, &edges);
            let want = oracle(&edges);
            let got: HashSet<(u32, u32)> = csr.edges().collect();
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(csr.n_edges(), want.len());
            for v in 0..n as u32 {
                let row = csr.neighbours(v);
                prop_assert!(row.windows(2).all(|w| w[0] < w[1]));
                for u in 0..n as u32 {
                    prop_assert_eq!(csr.has_edge(u, v), want.contains(&(u.min(v), u.max(v))));
                }
            }
            // Through a file and the memory-mapped reader.
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("g.csr");
            let mut bytes = Vec::new();
            csr.write(&mut bytes).unwrap();
            std::fs::write(&path, &bytes).unwrap();
            let back = Csr::read(&path).unwrap();
            prop_assert_eq!(back.offsets(), csr.offsets());
            prop_assert_eq!(back.targets(), csr.targets());
            prop_assert_eq!(back.edges().collect::<HashSet<_>>(), want);
        }

        #[test]
        fn every_step_is_an_edge_and_walks_start_at_their_node(
            (n, edges) in arb_graph(),
            (p, q) in arb_pq(),
            length in 1usize..12,
            wpn in 1usize..4,
            seed in any::<u64>(),
        ) {
            let csr = Csr::from_edges(n, &edges);
            let want = oracle(&edges);
            let cfg = WalkConfig { p, q, length, walks_per_node: wpn, seed, ..WalkConfig::default() };
            let w = walks::generate(&csr, &cfg);
            prop_assert_eq!(w.num_walks(), n * wpn);
            // Every round starts one walk at every node (in the round's own order).
            for round in w.data.chunks(n * length) {
                let mut starts: Vec<usize> = round.chunks(length).map(|walk| walk[0] as usize).collect();
                starts.sort_unstable();
                prop_assert_eq!(starts, (0..n).collect::<Vec<_>>());
            }
            for (i, walk) in w.iter().enumerate() {
                prop_assert_eq!(walk.len(), length);
                let isolated = csr.neighbours(walk[0]).is_empty();
                for (k, pair) in walk.windows(2).enumerate() {
                    if isolated {
                        prop_assert_eq!(pair[1], PAD, "walk {} pos {}", i, k + 1);
                    } else {
                        prop_assert!(
                            want.contains(&(pair[0].min(pair[1]), pair[0].max(pair[1]))),
                            "walk {} step {:?} is not an edge", i, pair
                        );
                    }
                }
            }
        }

        #[test]
        fn union_find_components_match_petgraph((n, edges) in arb_graph()) {
            let csr = Csr::from_edges(n, &edges);
            let labels = graph::component_labels(&csr);
            let mut g = petgraph::graph::UnGraph::<(), ()>::with_capacity(n, edges.len());
            for _ in 0..n {
                g.add_node(());
            }
            for &(a, b) in &edges {
                g.add_edge(a.into(), b.into(), ());
            }
            let comps = petgraph::algo::kosaraju_scc(&g);
            prop_assert_eq!(petgraph::algo::connected_components(&g), comps.len());
            let ours: BTreeSet<BTreeSet<usize>> = {
                let mut m: HashMap<u32, BTreeSet<usize>> = HashMap::new();
                for (v, &l) in labels.iter().enumerate() {
                    m.entry(l).or_default().insert(v);
                }
                m.into_values().collect()
            };
            let theirs: BTreeSet<BTreeSet<usize>> = comps
                .iter()
                .map(|c| c.iter().map(|x| x.index()).collect())
                .collect();
            prop_assert_eq!(&ours, &theirs);
            let s = graph::component_summary(&csr);
            prop_assert_eq!(s.count as usize, theirs.len());
            prop_assert_eq!(s.largest as usize, theirs.iter().map(|c| c.len()).max().unwrap_or(0));
        }
    }

    /// Pearson chi-square statistic of observed counts against expected probabilities.
    fn chi_square(observed: &[u64], expected_p: &[f64]) -> f64 {
        let total: u64 = observed.iter().sum();
        observed
            .iter()
            .zip(expected_p)
            .map(|(&o, &p)| {
                let e = p * total as f64;
                (o as f64 - e).powi(2) / e
            })
            .sum()
    }

    /// Upper 0.1% points of the chi-square distribution, df = 1..=6 (tables).
    const CHI2_999: [f64; 6] = [10.828, 13.816, 16.266, 18.467, 20.515, 22.458];

    fn assert_fits(observed: &[u64], expected_p: &[f64], what: &str) {
        let s: f64 = expected_p.iter().sum();
        assert!(
            (s - 1.0).abs() < 1e-12,
            "{what}: expected probabilities sum to {s}"
        );
        let chi = chi_square(observed, expected_p);
        let crit = CHI2_999[observed.len() - 2];
        assert!(
            chi < crit,
            "{what}: chi-square {chi:.2} ≥ {crit} (observed {observed:?}, expected {expected_p:?})"
        );
    }

    /// node2vec's unnormalised weight of `x` for the step `prev → cur → x`, straight from the paper's
    /// definition (distance between prev and x: 0 → 1/p, 1 → 1, 2 → 1/q), as an independent oracle.
    fn n2v_weight(edges: &HashSet<(u32, u32)>, prev: u32, x: u32, p: f64, q: f64) -> f64 {
        if x == prev {
            1.0 / p
        } else if edges.contains(&(prev.min(x), prev.max(x))) {
            1.0
        } else {
            1.0 / q
        }
    }

    const PQS: [(f64, f64); 6] = [
        (1.0, 1.0),
        (0.5, 2.0),
        (2.0, 0.5),
        (0.25, 4.0),
        (4.0, 0.25),
        (0.1, 0.3),
    ];

    #[test]
    fn star_graph_second_step_follows_node2vec() {
        // Centre 0, leaves 1..=5. Walks from leaf 1 go 1 → 0 → x; by hand: P(x = 1) = (1/p) / (1/p + 4/q),
        // P(x = other leaf) = (1/q) / (1/p + 4/q) each (leaves are not adjacent to each other).
        let edges: Vec<(u32, u32)> = (1..=5).map(|l| (0, l)).collect();
        let csr = Csr::from_edges(6, &edges);
        for (p, q) in PQS {
            let cfg = WalkConfig {
                p,
                q,
                length: 3,
                walks_per_node: 20_000,
                seed: 11,
                ..WalkConfig::default()
            };
            let w = walks::generate(&csr, &cfg);
            let mut counts = [0u64; 5];
            for walk in w.iter().filter(|walk| walk[0] == 1) {
                assert_eq!(walk[1], 0);
                counts[walk[2] as usize - 1] += 1;
            }
            let z = 1.0 / p + 4.0 / q;
            let mut expected = vec![(1.0 / q) / z; 5];
            expected[0] = (1.0 / p) / z;
            assert_fits(&counts, &expected, &format!("star p={p} q={q}"));
            // First step from the centre is uniform over the five leaves.
            let mut first = [0u64; 5];
            for walk in w.iter().filter(|walk| walk[0] == 0) {
                first[walk[1] as usize - 1] += 1;
            }
            assert_fits(&first, &[0.2; 5], &format!("star first step p={p} q={q}"));
        }
    }

    #[test]
    fn path_graph_transitions_follow_node2vec() {
        // Path 0-1-2-3-4. From 1 → 2 the next node is 1 (return, 1/p) or 3 (distance 2, 1/q).
        // From 0 → 1 the next node is 0 (return) or 2: P(0) = (1/p) / (1/p + 1/q).
        let edges = [(0, 1), (1, 2), (2, 3), (3, 4)];
        let csr = Csr::from_edges(5, &edges);
        for (p, q) in PQS {
            let cfg = WalkConfig {
                p,
                q,
                length: 3,
                walks_per_node: 20_000,
                seed: 5,
                ..WalkConfig::default()
            };
            let w = walks::generate(&csr, &cfg);
            let mut counts = [0u64; 2];
            for walk in w.iter().filter(|walk| walk[0] == 1 && walk[1] == 2) {
                counts[usize::from(walk[2] == 3)] += 1;
            }
            let z = 1.0 / p + 1.0 / q;
            assert_fits(
                &counts,
                &[(1.0 / p) / z, (1.0 / q) / z],
                &format!("path p={p} q={q}"),
            );
            // End node 4 → 3 → {2, 4}: same formula from the other end, using walks of length 3 from 4.
            let mut counts = [0u64; 2];
            for walk in w.iter().filter(|walk| walk[0] == 4) {
                counts[usize::from(walk[2] == 2)] += 1;
            }
            assert_fits(
                &counts,
                &[(1.0 / p) / z, (1.0 / q) / z],
                &format!("path end p={p} q={q}"),
            );
        }
    }

    #[test]
    fn all_three_weight_classes_and_a_hub_follow_node2vec() {
        // prev = 0, cur = 1. N(1) = {0, 2, 3, 4..=40}; 2 and 3 are also neighbours of 0 (weight 1), 0 is the
        // return (1/p), 4..=40 are at distance 2 (1/q). Node 0 is a hub (neighbours 1..=3 and 41..=540), so
        // `x ∈ N(prev)` is looked up in the shorter list. The step is driven directly through
        // `biased_step` with the expected distribution from `n2v_weight`, grouped into the three classes.
        let mut edges: Vec<(u32, u32)> = vec![(0, 1), (0, 2), (0, 3)];
        edges.extend((2..=40).map(|x| (1, x)));
        edges.extend((41..=540).map(|x| (0, x)));
        let csr = Csr::from_edges(541, &edges);
        let set = oracle(&edges);
        for (p, q) in PQS {
            let bias = Bias::new(p, q);
            let nb = csr.neighbours(1).to_vec();
            let weights: Vec<f64> = nb.iter().map(|&x| n2v_weight(&set, 0, x, p, q)).collect();
            let z: f64 = weights.iter().sum();
            let class = |x: u32| -> usize {
                if x == 0 {
                    0
                } else if x <= 3 {
                    1
                } else {
                    2
                }
            };
            let mut expected = [0.0; 3];
            for (&x, &wt) in nb.iter().zip(&weights) {
                expected[class(x)] += wt / z;
            }
            let mut counts = [0u64; 3];
            let mut rng = walks::walk_rng(99, 1, 0);
            for _ in 0..200_000 {
                let (x, tries) = walks::biased_step(&csr, &bias, 0, 1, &mut rng);
                assert!(tries >= 1);
                counts[class(x)] += 1;
            }
            assert_fits(&counts, &expected, &format!("kite p={p} q={q}"));
        }
    }

    #[test]
    fn library_and_artifact_agree_and_thread_count_does_not_matter() {
        let wd = Workdir::new();
        let mut text = String::from("# generated ring with chords\n");
        for i in 0..500u32 {
            text.push_str(&format!("{i}\t{}\n", (i + 1) % 500));
            text.push_str(&format!("{i} {}\n", (i * 7 + 3) % 500));
        }
        let edges = wd.write("g.edges", &text);
        let cfg = WalkConfig {
            p: 0.5,
            q: 2.0,
            length: 50,
            walks_per_node: 3,
            seed: 3,
            ..WalkConfig::default()
        };
        let mut files = Vec::new();
        for threads in [1, 2] {
            let dir = wd.join(&format!("t{threads}"));
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let edges = Some(edges.clone());
                run::<GraphStage>(&dir, &GraphConfig::default(), &GraphArgs { edges }).unwrap();
                run::<WalksStage>(&dir, &cfg, &NoSettings {}).unwrap();
            });
            files.push(std::fs::read(dir.join("walks.bin")).unwrap());
        }
        assert_eq!(files[0].len(), 24 + 1500 * 50 * 4);
        assert!(
            files[0] == files[1],
            "walks.bin differs between 1 and 2 threads"
        );
        let csr = Csr::read(&wd.join("t1/graph.csr")).unwrap();
        let mem = walks::generate(&csr, &cfg);
        let disk = Walks::read(&wd.join("t1/walks.bin")).unwrap();
        assert_eq!(mem, disk);
        // Batch boundaries (the streaming writer's unit) do not change the walks either, at 1 or 2 threads.
        for (threads, batch) in [(1, 1), (2, 7), (2, 499), (1, 1501)] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut data = Vec::new();
            let mut batches = 0;
            pool.install(|| {
                walks::generate_batched(
                    &csr,
                    &cfg,
                    batch,
                    &sword::core::progress::Progress::hidden(),
                    |b| {
                        assert_eq!(b.len() % 50, 0);
                        batches += 1;
                        data.extend_from_slice(b);
                        Ok(())
                    },
                )
                .unwrap()
            });
            assert_eq!(batches, 1500usize.div_ceil(batch));
            assert!(data == mem.data, "batch {batch}, {threads} threads");
        }
        // Node order is numeric for numeric keys.
        let keys = graph::read_nodes(&wd.join("t1/nodes.txt")).unwrap();
        assert_eq!(keys[..3], ["0", "1", "2"]);
        assert_eq!(keys[499], "499");
        // The manifest counts what happened.
        let m = Manifest::read(&wd.join("t1/walks.manifest.json")).unwrap();
        assert_eq!(m.counts["walks"], 1500);
        assert_eq!(m.counts["steps"], 1500 * 49);
        assert!(m.counts["candidates"] > m.counts["steps"]);
    }

    #[test]
    fn cli_graph_and_walks_text_on_an_edge_list() {
        let wd = Workdir::new();
        wd.write(
            "e.txt",
            "# wikidata-like ids\nQ42 Q5\nQ5\tQ100\nQ100 Q42\nQ42 Q5\nQ7 Q7\nQ100 Q9\n",
        );
        wd.run_ok(&["graph", "--out", "run", "--edges", "e.txt"]);
        assert_eq!(
            String::from_utf8(wd.read("run/nodes.txt")).unwrap(),
            "Q5\nQ7\nQ9\nQ42\nQ100\n"
        );
        let m = Manifest::read(&wd.join("run/graph.manifest.json")).unwrap();
        assert_eq!(m.counts["nodes"], 5);
        assert_eq!(m.counts["edges"], 4);
        assert_eq!(m.counts["self_loops_dropped"], 1);
        assert_eq!(m.counts["duplicate_edges_merged"], 1);
        assert_eq!(m.counts["isolated_nodes"], 1);
        assert_eq!(m.counts["largest_component"], 4);
        assert!((m.extra["components"]["largest_share"].as_f64().unwrap() - 0.8).abs() < 1e-12);
        wd.run_ok(&[
            "walks",
            "--out",
            "run",
            "--p",
            "0.5",
            "--q",
            "2",
            "--length",
            "6",
            "--walks-per-node",
            "3",
            "--seed",
            "9",
            "--text",
        ]);
        let edges: HashSet<(String, String)> = [
            ("Q42", "Q5"),
            ("Q5", "Q100"),
            ("Q100", "Q42"),
            ("Q100", "Q9"),
        ]
        .iter()
        .flat_map(|(a, b)| {
            [
                (a.to_string(), b.to_string()),
                (b.to_string(), a.to_string()),
            ]
        })
        .collect();
        let text = String::from_utf8(wd.read("run/walks.txt")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 15);
        // Each round of 5 walks starts once at every node (in the round's shuffled order).
        for round in lines.chunks(5) {
            let mut firsts: Vec<&str> =
                round.iter().map(|l| l.split(' ').next().unwrap()).collect();
            firsts.sort_unstable();
            assert_eq!(firsts, ["Q100", "Q42", "Q5", "Q7", "Q9"]);
        }
        for line in &lines {
            let toks: Vec<&str> = line.split(' ').collect();
            if toks[0] == "Q7" {
                assert_eq!(toks, ["Q7"], "isolated node: padding omitted");
                continue;
            }
            assert_eq!(toks.len(), 6);
            for pair in toks.windows(2) {
                assert!(
                    edges.contains(&(pair[0].to_string(), pair[1].to_string())),
                    "{line}"
                );
            }
        }
        let w = Walks::read(&wd.join("run/walks.bin")).unwrap();
        let isolated: Vec<&[u32]> = w.iter().filter(|walk| walk[0] == 1).collect();
        assert_eq!(isolated, [[1, PAD, PAD, PAD, PAD, PAD]; 3]);
        // The walks file follows walks.txt line by line (node ids in natural key order).
        let keys = ["Q5", "Q7", "Q9", "Q42", "Q100"];
        let keys_of = |walk: &[u32]| -> Vec<&str> {
            walk.iter()
                .filter(|&&v| v != PAD)
                .map(|&v| keys[v as usize])
                .collect()
        };
        for (walk, line) in w.iter().zip(&lines) {
            assert_eq!(keys_of(walk), line.split(' ').collect::<Vec<_>>());
        }
        // Other walks without --text: the walks.txt of the walks above goes (it would pass for these), and
        // the manifest and stderr say so.
        let out = wd
            .command(&["walks", "--out", "run", "--seed", "10"])
            .env_remove("SWORD_QUIET")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(!wd.join("run/walks.txt").exists());
        let m = Manifest::read(&wd.join("run/walks.manifest.json")).unwrap();
        assert_eq!(m.removed, ["walks.txt"]);
        let outputs: Vec<&str> = m.outputs.iter().map(|o| o.path.as_str()).collect();
        assert_eq!(outputs, ["walks.bin"]);
        assert!(err.contains("walks: removed walks.txt"), "{err}");
    }

    #[test]
    fn graph_from_triples_orders_qids_numerically() {
        use sword::core::ids::{Pid, Qid};
        use sword::core::records::{Rank, Triple};
        let wd = Workdir::new();
        let t = |s: u64, p: u64, o: u64| Triple {
            subject: Qid(s),
            property: Pid(p),
            object: Qid(o),
            rank: Rank::Normal,
            statement_id: String::new(),
        };
        let triples = vec![t(42, 31, 5), t(5, 279, 42), t(100, 31, 5), t(90, 17, 90)];
        let dir = wd.join("run");
        std::fs::create_dir_all(&dir).unwrap();
        let f = std::fs::File::create(dir.join("triples.parquet")).unwrap();
        sword::store::tables::write_triples(f, &triples, Path::new("triples.parquet")).unwrap();
        // Without a manifest from `extract` the input is refused as stale; with one it is accepted.
        let (code, err) = wd.run_err(&["graph", "--out", "run"]);
        assert_eq!(code, 3, "{err}");
        assert!(err.contains("triples.parquet"), "{err}");
        let mut m = Manifest::new("extract");
        m.add_outputs(&dir, &["triples.parquet"]).unwrap();
        m.write(&sword::store::RunDir::open(&dir).unwrap()).unwrap();
        let m = run::<GraphStage>(&dir, &GraphConfig::default(), &GraphArgs::default()).unwrap();
        assert_eq!(
            graph::read_nodes(&dir.join("nodes.txt")).unwrap(),
            ["Q5", "Q42", "Q90", "Q100"]
        );
        assert_eq!(m.counts["edges"], 2);
        assert_eq!(m.counts["duplicate_edges_merged"], 1);
        assert_eq!(m.counts["self_loops_dropped"], 1);
        let csr = Csr::read(&dir.join("graph.csr")).unwrap();
        assert_eq!(csr.edges().collect::<Vec<_>>(), vec![(0, 1), (0, 3)]);
    }

    #[test]
    fn malformed_edge_lists_name_file_and_line() {
        let wd = Workdir::new();
        for (body, line) in [
            ("a b\nc\n", "line 2"),
            ("# c\na b\n\nx y z\n", "line 4"),
            ("a b\n1 2 0.5\n", "line 2"),
        ] {
            wd.write("bad.edges", body);
            let (code, err) = wd.run_err(&["graph", "--out", "run", "--edges", "bad.edges"]);
            assert_eq!(code, 2, "{err}");
            assert!(err.contains("bad.edges") && err.contains(line), "{err}");
        }
        let (code, err) = wd.run_err(&["graph", "--out", "run", "--edges", "missing.edges"]);
        assert_eq!(code, 4, "{err}");
        assert!(err.contains("missing.edges"), "{err}");
    }

    #[test]
    fn corrupt_graph_csr_is_detected() {
        let wd = Workdir::new();
        wd.write("e.txt", "1 2\n2 3\n3 1\n3 4\n");
        wd.run_ok(&["graph", "--out", "run", "--edges", "e.txt"]);
        let good = wd.read("run/graph.csr");
        // A flipped byte: the manifest hash catches it.
        let mut b = good.clone();
        let last = b.len() - 1;
        b[last] ^= 1;
        wd.write("run/graph.csr", &b);
        let (code, err) = wd.run_err(&["walks", "--out", "run"]);
        assert_eq!(code, 3, "{err}");
        assert!(err.contains("graph.csr"), "{err}");
        // With --force the structural validation still refuses it (neighbour list no longer symmetric).
        let (code, err) = wd.run_err(&["walks", "--out", "run", "--force"]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("corrupt file") && err.contains("graph.csr"),
            "{err}"
        );
        // Truncated, and a future format version.
        wd.write("run/graph.csr", &good[..good.len() - 4]);
        let (_, err) = wd.run_err(&["walks", "--out", "run", "--force"]);
        assert!(err.contains("implies"), "{err}");
        let mut b = good.clone();
        b[8] = 2;
        wd.write("run/graph.csr", &b);
        let (_, err) = wd.run_err(&["walks", "--out", "run", "--force"]);
        assert!(err.contains("version 2"), "{err}");
        // Restored: works again.
        wd.write("run/graph.csr", &good);
        wd.run_ok(&["walks", "--out", "run"]);
    }

    #[test]
    fn bad_walk_config_is_a_config_error() {
        let wd = Workdir::new();
        wd.write("e.txt", "1 2\n");
        wd.run_ok(&["graph", "--out", "run", "--edges", "e.txt"]);
        let (code, err) = wd.run_err(&["walks", "--out", "run", "--p", "0"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("p must be"), "{err}");
        wd.write("w.toml", "q = 2.0\nlength = 4\n");
        wd.run_ok(&["walks", "--out", "run", "--config", "w.toml"]);
        let m = Manifest::read(&wd.join("run/walks.manifest.json")).unwrap();
        assert_eq!(m.config["q"], 2.0);
        assert_eq!(m.counts["walk_length"], 4);
        wd.write("w.toml", "qq = 2.0\n");
        let (code, _) = wd.run_err(&["walks", "--out", "run", "--config", "w.toml"]);
        assert_eq!(code, 2);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Training, `sword embed`, `sword similar` (helper "train").
mod train {
    use crate::util::{small_configs, small_dump, small_run_args, Workdir, FINAL_ARTIFACTS};
    use std::path::Path;
    use sword::store::embeddings::Embeddings;
    use sword::store::npy::read_npy;

    /// Two 10-cliques (ids a0..a9 and b0..b9) joined by the single edge a9–b0.
    fn two_cliques(wd: &Workdir) -> std::path::PathBuf {
        let mut s = String::new();
        for c in ["a", "b"] {
            for i in 0..10 {
                for j in i + 1..10 {
                    s.push_str(&format!("{c}{i}\t{c}{j}\n"));
                }
            }
        }
        s.push_str("a9 b0\n");
        wd.write("edges.tsv", s)
    }

    fn embed(wd: &Workdir, out: &str, threads: &str) {
        wd.run_ok(&[
            "-j",
            threads,
            "embed",
            "--edges",
            "edges.tsv",
            "--out",
            out,
            "--walks-per-node",
            "50",
            "--dim",
            "16",
            "--epochs",
            "3",
            "--sample",
            "0",
            "--seed",
            "5",
        ]);
    }

    #[test]
    fn embed_separates_two_communities() {
        let wd = Workdir::new();
        two_cliques(&wd);
        embed(&wd, "run", "2");
        let e = Embeddings::read_w2v(&wd.join("run/embeddings.w2v")).unwrap();
        assert_eq!((e.len(), e.dim), (20, 16));
        let (mut same, mut ns, mut cross, mut nc) = (0f32, 0, 0f32, 0);
        for a in &e.keys {
            for b in &e.keys {
                if a < b {
                    let c = e.cosine(a, b).unwrap();
                    if a[..1] == b[..1] {
                        same += c;
                        ns += 1;
                    } else {
                        cross += c;
                        nc += 1;
                    }
                }
            }
        }
        let (same, cross) = (same / ns as f32, cross / nc as f32);
        assert!(same > cross + 0.4, "same {same}, cross {cross}");
        // The nearest neighbours of a clique member are in its clique.
        let top = e.most_similar("a3", 5);
        assert!(top.iter().all(|(k, _)| k.starts_with('a')), "{top:?}");
    }

    #[test]
    fn any_thread_count_is_byte_identical_and_formats_agree() {
        let wd = Workdir::new();
        two_cliques(&wd);
        embed(&wd, "r1", "1");
        for j in ["1", "2", "8"] {
            embed(&wd, &format!("j{j}"), j);
            for f in ["embeddings.npy", "embeddings.w2v", "walks.bin"] {
                assert!(
                    wd.read(&format!("r1/{f}")) == wd.read(&format!("j{j}/{f}")),
                    "{f} differs between -j 1 and -j {j}"
                );
            }
        }
        // w2v reloads and round-trips exactly; the npy holds the same numbers, row = nodes.txt line.
        let w2v = wd.read("r1/embeddings.w2v");
        let e = Embeddings::read_w2v_from(&w2v[..], Path::new("r1/embeddings.w2v")).unwrap();
        let mut again = Vec::new();
        e.write_w2v(&mut again).unwrap();
        assert!(again == w2v, "w2v text does not round-trip byte for byte");
        let keys = sword::stages::embed::graph::read_nodes(&wd.join("r1/nodes.txt")).unwrap();
        assert_eq!(keys, e.keys);
        let npy = wd.read("r1/embeddings.npy");
        let m = read_npy(&npy[..], Path::new("npy")).unwrap();
        assert_eq!(m, e.vectors);
        // NPY v1.0 header checked by hand against the spec.
        assert_eq!(&npy[..8], b"\x93NUMPY\x01\x00");
        let hlen = u16::from_le_bytes([npy[8], npy[9]]) as usize;
        assert_eq!((10 + hlen) % 64, 0);
        let header = std::str::from_utf8(&npy[10..10 + hlen]).unwrap();
        assert_eq!(
            header.trim_end(),
            "{'descr': '<f4', 'fortran_order': False, 'shape': (20, 16), }"
        );
        assert!(header.ends_with('\n'));
        assert_eq!(npy.len(), 10 + hlen + 20 * 16 * 4);
        let first = f32::from_le_bytes([
            npy[10 + hlen],
            npy[11 + hlen],
            npy[12 + hlen],
            npy[13 + hlen],
        ]);
        assert_eq!(first.to_bits(), e.vectors[[0, 0]].to_bits());
        // The manifest vouches for both outputs.
        let m = sword::store::Manifest::read(&wd.join("r1/train.manifest.json")).unwrap();
        assert_eq!(m.outputs.len(), 2);
        assert_eq!(m.counts["nodes"], 20);
    }

    /// Training that scales may not cost reproducibility: `sword -j N run` gives the same bytes for N = 1, 2, 4, 8 — the embeddings and everything
    /// computed from them (the cosines in distortions.parquet and sword.parquet) included; `sword -j N train`
    /// on the same walks with every SIMD build this CPU runs (`SWORD_TRAIN_KERNEL`) rewrites the same
    /// embeddings.npy.
    #[test]
    fn run_and_train_give_the_same_bytes_at_any_thread_count_and_kernel() {
        let wd = Workdir::new();
        let dump = small_dump(&wd);
        small_configs(&wd, 60);
        for j in ["1", "2", "4", "8"] {
            wd.run_ok(&small_run_args(j, &dump, &format!("j{j}")));
        }
        for j in ["2", "4", "8"] {
            for name in FINAL_ARTIFACTS {
                assert!(
                    wd.read(&format!("j1/{name}")) == wd.read(&format!("j{j}/{name}")),
                    "{name} differs between -j 1 and -j {j}"
                );
            }
        }
        let npy = wd.read("j1/embeddings.npy");
        let kernels = sword::stages::embed::train::Kernel::available();
        for (k, j) in kernels.iter().zip(["3", "1", "2"].iter().cycle()) {
            let out = wd
                .command(&[
                    "-j",
                    j,
                    "train",
                    "--out",
                    "j2",
                    "--config",
                    "conf/train.toml",
                    "--seed",
                    "3",
                ])
                .env("SWORD_TRAIN_KERNEL", k.name())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let m = sword::store::Manifest::read(&wd.join("j2/train.manifest.json")).unwrap();
            assert_eq!(m.extra["kernel"], k.name());
            // Where the threads' time went: every phase counted, none more than the threads had.
            let ts = &m.extra["thread_seconds"];
            let phase = |p: &str| ts[p].as_f64().unwrap_or(-1.0);
            let phases = ["compute", "apply", "draw", "wait"];
            assert!(phases.iter().all(|p| phase(p) >= 0.0), "{ts}");
            assert!(phase("compute") > 0.0 && phase("draw") > 0.0, "{ts}");
            let threads = m.count("threads") as f64;
            let sum: f64 = phases.iter().map(|p| phase(p)).sum();
            assert!(
                sum <= threads * m.timings["train"] + 1e-3,
                "{ts} over {threads} threads"
            );
            assert!(
                wd.read("j2/embeddings.npy") == npy,
                "{} at -j {j} gives other embeddings",
                k.name()
            );
        }
        // A build this CPU cannot run, or no such build: a configuration error before any work.
        let out = wd
            .command(&["train", "--out", "j2"])
            .env("SWORD_TRAIN_KERNEL", "sse9")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("SWORD_TRAIN_KERNEL=sse9"));
    }

    #[test]
    fn train_stage_refuses_missing_walks() {
        let wd = Workdir::new();
        let (code, err) = wd.run_err(&["train", "--out", "."]);
        assert_eq!(code, 3, "{err}");
        assert!(err.contains("walks.bin"), "{err}");
    }

    #[test]
    fn similar_prints_a_table_and_names_bad_lines() {
        let wd = Workdir::new();
        wd.write("e.w2v", "3 2\nQ1 1 0\nQ2 0.6 0.8\nQ3 -1 0\n");
        let out = wd.run_ok(&["similar", "Q1", "--top", "2", "--embeddings", "e.w2v"]);
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(
            lines[1].contains("Q2") && lines[1].contains("0.6000"),
            "{text}"
        );
        assert!(
            lines[2].contains("Q3") && lines[2].contains("-1.0000"),
            "{text}"
        );
        wd.write("bad.w2v", "2 2\nQ1 1 0\nQ2 0.5 x\n");
        let (code, err) = wd.run_err(&["similar", "Q1", "--embeddings", "bad.w2v"]);
        assert_eq!(code, 2);
        assert!(err.contains("bad.w2v") && err.contains("line 3"), "{err}");
        let (code, err) = wd.run_err(&["similar", "Q9", "--embeddings", "e.w2v"]);
        assert_eq!(code, 2);
        assert!(err.contains("Q9"), "{err}");
    }
}
