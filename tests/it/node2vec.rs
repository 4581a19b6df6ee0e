//! Integration tests for `node2vec`.

// ---------------------------------------------------------------------------------------------------------
// Training, `sword embed`, `sword similar` (helper "train").
mod train {
    use crate::util::Workdir;
    use std::path::Path;
    use sword::embed::{read_npy, Embeddings};

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
    fn one_thread_is_byte_identical_and_formats_agree() {
        let wd = Workdir::new();
        two_cliques(&wd);
        embed(&wd, "r1", "1");
        embed(&wd, "r2", "1");
        for f in ["embeddings.npy", "embeddings.w2v", "walks.bin"] {
            assert!(
                wd.read(&format!("r1/{f}")) == wd.read(&format!("r2/{f}")),
                "{f} differs between two one-thread runs"
            );
        }
        // w2v reloads and round-trips exactly; the npy holds the same numbers, row = nodes.txt line.
        let w2v = wd.read("r1/embeddings.w2v");
        let e = Embeddings::read_w2v_from(&w2v[..], Path::new("r1/embeddings.w2v")).unwrap();
        let mut again = Vec::new();
        e.write_w2v(&mut again).unwrap();
        assert!(again == w2v, "w2v text does not round-trip byte for byte");
        let keys = sword::graph::read_nodes(&wd.join("r1/nodes.txt")).unwrap();
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
        let m = sword::artifact::Manifest::read(&wd.join("r1/train.manifest.json")).unwrap();
        assert_eq!(m.outputs.len(), 2);
        assert_eq!(m.counts["nodes"], 20);
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
