//! AdversaRiskQA long-form factuality (paper §3.2.3, Table 6): F1@K over answers whose facts were checked.
//!
//! `--suite longform` reads per-answer fact counts, one JSON object per line:
//! `{"supported": S, "not_supported": N, "irrelevant": I (optional), "condition": "..." (optional)}`.
//! Every count must be a whole number from 0 to [`MAX_FACTS`]: a negative, fractional, string or huge count
//! (2⁶⁴−1 would make F1 exceed 1) is an error naming the line and its byte offset, exit 2.

use super::adversariskqa::mean_f1_at_k;
use super::jsonl::{self, Pos};
use crate::error::{Error, Result};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// Largest fact count of one answer accepted. A long answer has a few dozen facts (the published files: at
/// most a few dozen); anything near this bound is damaged data, not an answer.
pub const MAX_FACTS: u64 = 100_000;

/// K of F1@K: a fixed number, or `auto` (the median fact count of the scored answers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum K {
    Fixed(usize),
    Auto,
}

impl std::str::FromStr for K {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<K, String> {
        if s.eq_ignore_ascii_case("auto") {
            return Ok(K::Auto);
        }
        match s.parse::<usize>() {
            Ok(0) => Err("K must be at least 1 (or `auto`)".into()),
            Ok(k) if k as u64 <= MAX_FACTS => Ok(K::Fixed(k)),
            Ok(_) => Err(format!("K must be at most {MAX_FACTS}")),
            Err(_) => Err(format!("`{s}` is neither a whole number nor `auto`")),
        }
    }
}

/// The median of fact counts, rounded half up to a whole K (at least 1); `None` when there are none.
pub fn median_k(counts: &[usize]) -> Option<usize> {
    let mut v = counts.to_vec();
    v.sort_unstable();
    let n = v.len();
    let (a, b) = (*v.get((n.checked_sub(1)?) / 2)?, *v.get(n / 2)?);
    // (a + b) / 2 rounded half up, in integers.
    Some((a + b).div_ceil(2).max(1))
}

/// One count field of a record: a whole number in `0..=MAX_FACTS`; `None` when absent (or null).
pub fn count_field(
    o: &Map<String, Value>,
    key: &str,
    pos: Pos,
    path: &Path,
) -> Result<Option<usize>> {
    let bad = |what: String| pos.err(path, format!("count `{key}` {what}"));
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            if let Some(u) = n.as_u64() {
                if u > MAX_FACTS {
                    return Err(bad(format!(
                        "is {u}, more than {MAX_FACTS} facts in one answer"
                    )));
                }
                return Ok(Some(u as usize));
            }
            if n.as_i64().is_some() || n.as_f64().is_some_and(|f| f < 0.0) {
                return Err(bad(format!("is negative ({n})")));
            }
            Err(bad(format!("is not a whole number ({n})")))
        }
        Some(other) => Err(bad(format!("is not a number ({other})"))),
    }
}

/// Per-answer counts: (supported, not_supported, irrelevant) grouped by `condition` (default `all`).
pub type CountGroups = BTreeMap<String, Vec<(usize, usize, usize)>>;

/// Read a counts JSONL (see the module docs) from any reader.
pub fn read_counts<R: std::io::BufRead>(r: R, path: &Path) -> Result<CountGroups> {
    let mut groups = CountGroups::new();
    for (pos, v) in jsonl::read_values(r, path)? {
        let Value::Object(o) = v else {
            return Err(pos.err(path, "not a JSON object"));
        };
        let need = |k: &str| {
            count_field(&o, k, pos, path)?.ok_or_else(|| pos.err(path, format!("no count `{k}`")))
        };
        let s = need("supported")?;
        let ns = need("not_supported")?;
        let ir = count_field(&o, "irrelevant", pos, path)?.unwrap_or(0);
        let cond = match o.get("condition") {
            None | Some(Value::Null) => "all".to_string(),
            Some(Value::String(c)) => c.clone(),
            Some(other) => {
                return Err(pos.err(path, format!("`condition` is not a string ({other})")))
            }
        };
        groups.entry(cond).or_default().push((s, ns, ir));
    }
    if groups.is_empty() {
        return Err(Error::bad_input(
            path,
            "no answer: the file holds no JSON line with fact counts",
        ));
    }
    Ok(groups)
}

/// Score counts as the paper (T = all facts) and as SAFE (irrelevant facts left out), per condition.
pub fn score_counts(groups: &CountGroups, k: K) -> Value {
    let all: Vec<usize> = groups
        .values()
        .flatten()
        .map(|&(s, ns, ir)| s + ns + ir)
        .collect();
    let k = match k {
        K::Fixed(k) => k,
        K::Auto => median_k(&all).unwrap_or(1),
    };
    let rows: Vec<Value> = groups
        .iter()
        .map(|(c, f)| {
            let (p, s) = mean_f1_at_k(f, k).unwrap_or((f64::NAN, f64::NAN));
            let n = f.len().max(1) as f64;
            serde_json::json!({
                "condition": c, "answers": f.len(), "k": k,
                "mean_f1_paper": p, "mean_f1_safe": s,
                "mean_facts": f.iter().map(|x| (x.0 + x.1 + x.2) as f64).sum::<f64>() / n,
                "mean_supported": f.iter().map(|x| x.0 as f64).sum::<f64>() / n,
            })
        })
        .collect();
    serde_json::json!({ "k": k, "conditions": rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<CountGroups> {
        read_counts(text.as_bytes(), Path::new("c.jsonl"))
    }

    #[test]
    fn counts_are_validated_with_their_position() {
        let g = read("{\"supported\":2,\"not_supported\":1}\n").unwrap();
        assert_eq!(g["all"], [(2, 1, 0)]);
        for (line, want) in [
            (
                "{\"supported\":1,\"not_supported\":18446744073709551615}",
                "count `not_supported` is 18446744073709551615, more than 100000",
            ),
            (
                "{\"supported\":-1,\"not_supported\":0}",
                "count `supported` is negative (-1)",
            ),
            (
                "{\"supported\":1.5,\"not_supported\":0}",
                "count `supported` is not a whole number (1.5)",
            ),
            (
                "{\"supported\":\"3\",\"not_supported\":0}",
                "count `supported` is not a number (\"3\")",
            ),
            (
                "{\"supported\":1,\"not_supported\":0,\"irrelevant\":-2}",
                "count `irrelevant` is negative (-2)",
            ),
            ("{\"supported\":1}", "no count `not_supported`"),
            ("[1]", "not a JSON object"),
        ] {
            let text = format!("{{\"supported\":0,\"not_supported\":0}}\n{line}\n");
            let e = read(&text).unwrap_err();
            let msg = e.to_string();
            assert!(
                msg.contains("line 2, byte offset 34") && msg.contains(want),
                "{line}: {msg}"
            );
            assert_eq!(e.exit_code(), 2);
        }
        assert!(read("\n\n").unwrap_err().to_string().contains("no answer"));
    }

    #[test]
    fn k_parses_and_median_rounds_half_up() {
        assert_eq!("8".parse::<K>(), Ok(K::Fixed(8)));
        assert_eq!("AUTO".parse::<K>(), Ok(K::Auto));
        assert!("0".parse::<K>().is_err());
        assert!("-3".parse::<K>().is_err());
        assert!("1000001".parse::<K>().is_err());
        assert_eq!(median_k(&[3, 9, 1]), Some(3));
        assert_eq!(median_k(&[6, 7]), Some(7)); // 6.5 -> 7
        assert_eq!(median_k(&[0, 0]), Some(1));
        assert_eq!(median_k(&[]), None);
    }
}
